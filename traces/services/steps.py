"""A step as it is stored, whichever way it came: the recorded reply read by the grammar, a point outside its
screenshot flagged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from traces import grammar
from traces.importers import ImportedStep
from traces.models import Project, Screenshot, Step

if TYPE_CHECKING:
    from traces.models import Project


@dataclass
class ParsedReply:
    thought: str
    reflection: str
    action_summary: str
    action_text: str
    actions: list[dict]
    error: str


def reply_parse(raw: str) -> ParsedReply:
    """Split a recorded model reply into its parts; an unparseable action is kept raw with the reason."""
    try:
        parsed = grammar.parse_response(raw)
    except grammar.ActionSyntaxError as exc:
        thought, _, after_label = raw.partition("Action:")
        thought = thought.strip()
        for prefix in ("Thought:",):
            if prefix in thought:
                thought = thought.split(prefix, 1)[1].strip()
        start = exc.action_start
        section = raw[start:] if start is not None else ""
        shown = section.strip()
        if start is None or not shown:
            # No action was read (no label, an open <think>, nothing after the label): the reason alone, since a
            # position would count into a text the page does not show as the action.
            return ParsedReply(thought, "", "", after_label.strip() or raw.strip(), [], exc.message)
        # The page shows the action section, as a parsed step's action_text is: the position counts from it, not
        # from the start of the whole reply ("Thought: …\nAction: …").
        offset = start + len(section) - len(section.lstrip())
        return ParsedReply(thought, "", "", shown, [], str(exc.counted_from(offset)))
    return ParsedReply(
        parsed.thought or "",
        parsed.reflection or "",
        parsed.action_summary or "",
        parsed.action_text,
        [action.to_json() for action in parsed.actions],
        "",
    )


def reply_from_parts(*, thought: str, action_text: str) -> ParsedReply:
    """For sources that record the action apart from the reply (already in our grammar, or kept raw)."""
    try:
        actions = grammar.parse_actions(action_text)
    except grammar.ActionSyntaxError as exc:
        return ParsedReply(thought, "", "", action_text, [], str(exc))
    if not actions:
        return ParsedReply(thought, "", "", action_text, [], "no action recorded")
    return ParsedReply(thought, "", "", action_text, [action.to_json() for action in actions], "")


def step_build(
    *, index: int, imported: ImportedStep, screenshot: Screenshot | None, convention: str, project: Project
) -> Step:
    """Step ``index`` of a trace as it is stored (not saved yet), whichever way it came (an import, a whole push, a
    runner's step push): its action parsed by the grammar, an unparseable one kept raw with the reason, a point
    outside the screenshot flagged."""
    if imported.parse_error:
        reply = ParsedReply(
            imported.thought or "", "", "", imported.action_text or imported.raw_response, [], imported.parse_error
        )
    elif imported.action_text is not None:
        reply = reply_from_parts(thought=imported.thought or "", action_text=imported.action_text)
    else:
        reply = reply_parse(imported.raw_response)
    return Step(
        index=index,
        screenshot=screenshot,
        thought=imported.thought if imported.thought is not None else reply.thought,
        reflection=reply.reflection,
        action_summary=reply.action_summary,
        action_text=imported.action_text if imported.action_text is not None else reply.action_text,
        raw_response=imported.raw_response,
        parsed_actions=reply.actions,
        parse_error=reply.error,
        off_screen_point=step_off_screen_point(
            parsed_actions=reply.actions, screenshot=screenshot, convention=convention, project=project
        ),
        human_edited_response=imported.human_edited_response,
        context=imported.context,
    )


def step_off_screen_point(
    *, parsed_actions: list[dict], screenshot: Screenshot | None, convention: str, project: Project
) -> str:
    """Why a recorded step's points fall outside its screenshot in the trace's convention ("" when they are all
    inside, or when there is no screenshot to measure them against)."""
    if not parsed_actions or screenshot is None:
        return ""
    actions = [grammar.Action.from_json(item) for item in parsed_actions]
    return "; ".join(
        grammar.off_screen_points(
            actions,
            convention=convention,
            width=screenshot.width,
            height=screenshot.height,
            max_pixels=project.max_pixels,
        )
    )
