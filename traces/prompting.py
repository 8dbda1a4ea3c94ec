"""THE prompt builder: the one place that turns a trace state into model input.

Exports (SFT/DPO bundles) and pre-scoring both call it, so the template, the history window, the
image budget and the coordinate convention a model is trained with are the ones it is scored with
(docs/architecture.md, traces/: one prompt builder serves export and pre-scoring alike).

Layout (UI-TARS agents' own prompt)::

    system    project.system_prompt                       ("You are a helpful assistant.")
    user      project.prompt_template filled in            (instruction, action space, language)
    for each history step j = 1 .. i-1:
        user      [image o_j]        only for the last N-1 history steps (N = project.history_window)
        assistant "Thought: t_j\\nAction: a_j"   actions re-rendered canonically, box tokens per project
    user      [image o_i]                                 the current observation (counts towards N)

Older history steps stay as text-only assistant turns (consecutive assistant messages, exactly as
the UI-TARS runners send them). The project's image budget (``history_full_images`` k > 0) sends the last k
screenshots at the project's pixel bounds and older ones smaller (:class:`ReducedImage`, at ``history_max_pixels``);
a history reply's points stay where they are on the screen: in smart-resize-pixels, whose points are pixels of the
image as sent, in the reduced image's size (:func:`render_step_on`); in screen-pixels and relative-1000 as recorded.
The state s_i uses steps 1..i-1; ``i = n + 1`` means "after the last step", whose observation is
``trace.final_screenshot``.

The result is neutral (:class:`StatePrompt`: messages whose parts are text or an image slot, plus the
list of images in slot order); :func:`to_chat_messages` renders it for a Qwen2-VL chat template /
TRL, and the export writers render it for LLaMA-Factory.

Public API::

    build_state_messages(trace, i, *, project=None, steps=None) -> StatePrompt
    build_prompt(*, project, instruction, history, current_image) -> StatePrompt
    render_target(thought, action_text, *, project) -> str     # "Thought: ...\\nAction: ..."
    target_text(thought, actions) -> str                        # render_target of render_actions' text
    render_step(step, *, project, convention) -> str            # a recorded step, its points in the trace's convention
    action_space_text(project) -> str
    to_chat_messages(prompt, *, image=None) -> list[dict]       # [{"role", "content": [{"type": ...}]}]
    to_placeholder_messages(prompt, *, image_token) -> list[dict]  # [{"role", "content": "text<image>..."}]
    build_trajectory(trace, upto, *, project, steps) -> Trajectory  # steps 1..upto, each with its o_k (PRM)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from traces import grammar
from traces.prompt_settings import DEFAULT_PROMPT_TEMPLATE, PROMPT_DEFAULTS, PromptSettings

IMAGE = "image"
TEXT = "text"


class PromptError(ValueError):
    """A state that cannot be turned into a prompt (missing observation, unparseable target...)."""


@dataclass(frozen=True)
class Part:
    """One piece of a message: ``kind`` "text" (``text`` set) or "image" (``image_index`` into StatePrompt.images)."""

    kind: str
    text: str = ""
    image_index: int = -1


@dataclass(frozen=True)
class Message:
    role: str  # system | user | assistant
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if p.kind == TEXT)

    @property
    def image_count(self) -> int:
        return sum(1 for p in self.parts if p.kind == IMAGE)


@dataclass(frozen=True)
class StatePrompt:
    """Model input for one state: ``messages`` reference ``images`` (Screenshot objects or anything
    with a ``sha256``) by position; every image slot appears exactly once, in order."""

    messages: tuple[Message, ...]
    images: tuple[Any, ...] = field(default=())

    def with_turns(self, *extra: Message) -> StatePrompt:
        return StatePrompt(self.messages + extra, self.images)


@dataclass(frozen=True)
class HistoryStep:
    """A past step as the prompt needs it: its observation (may be None) and its reply text."""

    image: Any
    response: str


def text_message(role: str, text: str) -> Message:
    return Message(role, (Part(TEXT, text=text),))


# --- the action space in the template ----------------------------------------------------------


def action_space_text(project) -> str:
    """The ``{action_space}`` of the template for the project's platform, box tokens on or off."""
    return _action_space(project.platform, bool(project.box_tokens))


@functools.lru_cache(maxsize=16)
def _action_space(platform: str, box_tokens: bool) -> str:
    # Made once per platform and setting: every prompt an export or a scoring builds fills its template with it.
    def point(name: str) -> str:
        inner = f"({name})"
        return "'" + (grammar.BOX_START + inner + grammar.BOX_END if box_tokens else inner) + "'"

    lines = grammar.PROMPT_ACTION_LINES[platform]
    return "\n".join(line.format(p1=point("x1,y1"), p3=point("x3,y3")) for line in lines)


def instruction_text(project, instruction: str) -> str:
    """The project's template with its placeholders filled (plain replacement: templates may hold braces)."""
    return (
        project.prompt_template.replace("{action_space}", action_space_text(project))
        .replace("{language}", project.prompt_language)
        .replace("{instruction}", instruction)
    )


# --- replies ---------------------------------------------------------------------------------------


def render_actions(action_text: str, *, project) -> str:
    """Parse one or more UI-TARS calls and render them canonically with the project's box-token setting, every point
    an integer (``grammar.round_action``: a point stored with decimals is trained as the model would emit it).

    Raises PromptError naming the problem when the text does not parse."""
    try:
        parsed = grammar.parse_actions(action_text)
    except grammar.ActionSyntaxError as exc:
        raise PromptError(f"action {action_text!r} does not parse: {exc}") from None
    if not parsed:
        raise PromptError("empty action")
    return "\n\n".join(grammar.render_action(grammar.round_action(a)[0], box_tokens=project.box_tokens) for a in parsed)


def render_target(thought: str, action_text: str, *, project) -> str:
    """A training target / candidate reply: ``Thought: t\\nAction: a`` (no thought → ``Action: a``)."""
    return target_text(thought, render_actions(action_text, project=project))


def target_text(thought: str, actions: str) -> str:
    """:func:`render_target` of actions rendered already (``render_actions``'s text)."""
    thought = (thought or "").strip()
    return f"Thought: {thought}\nAction: {actions}" if thought else f"Action: {actions}"


def step_actions(step, *, project, convention: str) -> list:
    """A recorded step's actions in the project's convention (the trace recorded them in ``convention``, required:
    the trace's ``coordinate_convention``): what prompts, exports, pre-scoring and the pages use. Raises PromptError
    when they cannot be converted (no screenshot size)."""
    actions = [grammar.Action.from_json(a) for a in step.parsed_actions]
    source = convention
    if source == project.coordinate_convention or not any(a.point() or a.point(grammar.END_BOX) for a in actions):
        return actions
    if step.screenshot is None:
        raise PromptError(f"step {step.index}'s points are in {source} and it has no screenshot to convert them by")
    width, height = step.screenshot.width, step.screenshot.height
    return [
        grammar.convert_action(
            a, src=source, dst=project.coordinate_convention, width=width, height=height, max_pixels=project.max_pixels
        )
        for a in actions
    ]


def render_step(step, *, project, convention: str) -> str:
    """A recorded step as the assistant turn the model produced: canonical when it parsed (its points in the project's
    convention, integers as the model emits them), else as recorded. The one renderer of a recorded step: prompts'
    histories, exports' targets and rejected sides, pre-scoring's scored reply and the alternatives' prompts all come
    from here. ``convention`` is the trace's (``trace.coordinate_convention``) and has no default: a step rendered as
    if recorded in the project's convention puts its point elsewhere on the screen."""
    if step.parsed_actions and not step.parse_error:
        actions = [grammar.round_action(a)[0] for a in step_actions(step, project=project, convention=convention)]
        return grammar.render_response(
            step.thought, actions, box_tokens=project.box_tokens, reflection=step.reflection or None
        )
    if step.raw_response.strip():
        return step.raw_response.strip()
    thought = step.thought.strip()
    return (
        f"Thought: {thought}\nAction: {step.action_text.strip()}" if thought else f"Action: {step.action_text.strip()}"
    )


# --- states ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReducedImage:
    """A history screenshot sent smaller than the project's bounds (the image budget): ``screenshot`` resized to
    ``width × height``, its ``smart_resize`` size at ``history_max_pixels``, so the model's processor (at the
    project's bounds) leaves it as it is. Exports write it as its own image, pre-scoring resizes it the same way."""

    screenshot: Any
    width: int
    height: int

    @property
    def sha256(self) -> str:
        # A key, not a digest of the resized bytes: the screenshot's and the size it is sent at.
        return f"{self.screenshot.sha256}-{self.width}x{self.height}"

    @property
    def format(self) -> str:
        return "PNG"

    def resize(self, image):
        """The PIL ``image`` of the screenshot at this size (bicubic, as Qwen2-VL's processor resizes)."""
        from PIL import Image

        return image.convert("RGB").resize((self.width, self.height), Image.Resampling.BICUBIC)


# The conventions whose points are pixels of the image as it is sent (smart_resize's size), so a point on a reduced
# image is rescaled to its size; screen-pixels points are the screen's pixels and relative-1000 points have no size.
RESCALED_CONVENTIONS = (grammar.SMART_RESIZE_PIXELS,)


def reduced_image(screenshot, project):
    """``screenshot`` as an older history image is sent under the project's budget: a :class:`ReducedImage`, or the
    screenshot itself when the budget would not make it smaller."""
    budget = int(project.history_max_pixels)
    full = grammar.smart_resize(screenshot.height, screenshot.width, max_pixels=project.max_pixels)
    height, width = grammar.smart_resize(
        screenshot.height, screenshot.width, max_pixels=min(budget, project.max_pixels)
    )
    if (height, width) == full:
        return screenshot
    return ReducedImage(screenshot, width, height)


def rescale_action(action: grammar.Action, *, project, screenshot, image: ReducedImage) -> grammar.Action:
    """``action`` (the project's convention, on ``screenshot`` at the project's bounds) with its points where they lie
    on ``image``, the screenshot as it is sent. Only smart-resize-pixels names pixels of the image as sent, so only
    there do the points change: to the reduced image's ``smart_resize`` size, whole numbers as models emit. A
    screen-pixels point is a pixel of the screen whatever size its image goes at, and relative-1000 has no size:
    both stay as they are, so no prompt mixes two sizes for one screen."""
    convention = project.coordinate_convention
    if convention not in RESCALED_CONVENTIONS:
        return action
    width, height = screenshot.width, screenshot.height
    args = []
    for key, value in action.args:
        if isinstance(value, tuple):
            x, y = grammar.to_screen_pixels(
                value, convention=convention, width=width, height=height, max_pixels=project.max_pixels
            )
            value = (grammar.model_number(x * image.width / width), grammar.model_number(y * image.height / height))
        args.append((key, value))
    return grammar.Action(action.type, tuple(args), action.style)


def render_step_on(step, image: ReducedImage, *, project, convention: str) -> str:
    """A recorded step as its history turn when its screenshot is sent reduced: :func:`render_step` with every point
    where it lies on ``image`` (:func:`rescale_action`)."""
    if not step.parsed_actions or step.parse_error or project.coordinate_convention not in RESCALED_CONVENTIONS:
        return render_step(step, project=project, convention=convention)
    actions = [
        rescale_action(action, project=project, screenshot=step.screenshot, image=image)
        for action in step_actions(step, project=project, convention=convention)
    ]
    return grammar.render_response(
        step.thought, actions, box_tokens=project.box_tokens, reflection=step.reflection or None
    )


def budget_reduced(project, imaged: int) -> int:
    """How many of a prompt's ``imaged`` history screenshots (oldest first) go reduced: all but the last
    ``history_full_images`` - 1 (o_i is the k-th); none without a budget."""
    full = int(getattr(project, "history_full_images", 0) or 0)
    return 0 if full <= 0 else max(0, imaged + 1 - full)


def build_prompt(*, project, instruction: str, history: Sequence[HistoryStep], current_image) -> StatePrompt:
    """The UI-TARS message layout for one state (see the module docstring)."""
    if current_image is None:
        raise PromptError("the current observation has no screenshot")
    window = max(1, int(project.history_window))
    images: list[Any] = []
    messages: list[Message] = [
        text_message("system", project.system_prompt),
        text_message("user", instruction_text(project, instruction)),
    ]

    def image_message(image) -> Message:
        images.append(image)
        return Message("user", (Part(IMAGE, image_index=len(images) - 1),))

    first_imaged = len(history) - (window - 1)  # the last N-1 history steps carry their image
    for j, past in enumerate(history):
        if j >= first_imaged and past.image is not None:
            messages.append(image_message(past.image))
        messages.append(text_message("assistant", past.response))
    messages.append(image_message(current_image))
    return StatePrompt(tuple(messages), tuple(images))


def observation(trace, steps: Sequence, i: int):
    """o_i: step i's screenshot, or the trace's final screenshot for i = n + 1."""
    if 1 <= i <= len(steps):
        return steps[i - 1].screenshot
    if i == len(steps) + 1:
        return trace.final_screenshot
    raise PromptError(f"state {i} is outside trace {trace.pk} with {len(steps)} steps")


def build_state_messages(
    trace, i: int, *, project=None, steps: Sequence | None = None, render: Callable[..., str] = render_step
) -> StatePrompt:
    """s_i of ``trace``: history of steps 1..i-1 (as recorded) and the observation o_i.

    ``steps`` (ordered by index, screenshots loaded) saves a query when the caller has them;
    ``project`` defaults to ``trace.project``. Post-reflection inputs are ``i = τ + 1``: the original
    wrong step τ stays in the history."""
    project = project or trace.project
    if steps is None:
        from traces.selectors import trace_steps

        steps = list(trace_steps(trace))
    current = observation(trace, steps, i)
    if current is None:
        where = "the final screenshot" if i == len(steps) + 1 else f"step {i}'s screenshot"
        raise PromptError(f"trace {trace.pk} has no observation o_{i} ({where} is missing)")
    past = steps[: i - 1]
    # The steps build_prompt sends with their screenshot, and of those the older ones the image budget reduces.
    window = max(1, int(project.history_window))
    imaged = [j for j, step in enumerate(past) if j >= len(past) - (window - 1) and step.screenshot is not None]
    reduced = set(imaged[: budget_reduced(project, len(imaged))])
    history = []
    for j, step in enumerate(past):
        image = reduced_image(step.screenshot, project) if j in reduced else step.screenshot
        if isinstance(image, ReducedImage):
            text = render_step_on(step, image, project=project, convention=trace.coordinate_convention)
        else:
            text = render(step, project=project, convention=trace.coordinate_convention)
        history.append(HistoryStep(image, text))
    return build_prompt(project=project, instruction=trace.instruction, history=history, current_image=current)


@dataclass(frozen=True)
class Trajectory:
    """A trace's first ``upto`` steps as a process reward model reads them: the system prompt, the user turn (the
    template filled with the instruction, as in every state prompt), and per step k its observation ``images[k]``
    (o_k, the screen step k acted on) and its reply ``replies[k]`` as the history turn renders it."""

    system: str
    instruction: str
    images: tuple[Any, ...]
    replies: tuple[str, ...]


def build_trajectory(
    trace, upto: int, *, project=None, steps: Sequence | None = None, render: Callable[..., str] = render_step
) -> Trajectory:
    """Steps 1..``upto`` of ``trace`` with their observations (every one: a PRM scores each step on its own screen,
    so the history window does not apply). The image budget does, as to every prompt with a history: the last
    ``history_full_images`` screenshots at the project's bounds, the older ones reduced with their replies' points
    where they lie on the image as sent (:func:`render_step_on`). Raises PromptError when a step has no screenshot."""
    project = project or trace.project
    if steps is None:
        from traces.selectors import trace_steps

        steps = list(trace_steps(trace))
    if not 1 <= upto <= len(steps):
        raise PromptError(f"trace {trace.pk} has {len(steps)} steps, not {upto}")
    missing = next((step.index for step in steps[:upto] if step.screenshot is None), None)
    if missing is not None:
        raise PromptError(f"trace {trace.pk} has no observation o_{missing} (step {missing}'s screenshot is missing)")
    # The last step's screenshot is the one being judged, as o_i is a state's: budget_reduced counts the others.
    reduced = budget_reduced(project, upto - 1)
    images, replies = [], []
    for j, step in enumerate(steps[:upto]):
        image = reduced_image(step.screenshot, project) if j < reduced else step.screenshot
        if isinstance(image, ReducedImage):
            replies.append(render_step_on(step, image, project=project, convention=trace.coordinate_convention))
        else:
            replies.append(render(step, project=project, convention=trace.coordinate_convention))
        images.append(image)
    return Trajectory(
        system=project.system_prompt,
        instruction=instruction_text(project, trace.instruction),
        images=tuple(images),
        replies=tuple(replies),
    )


# --- renderings ------------------------------------------------------------------------------------


def to_chat_messages(
    prompt: StatePrompt | Iterable[Message], *, image: Callable[[Any], dict] | None = None
) -> list[dict]:
    """Chat-template / TRL messages: content lists of ``{"type": "text", "text"}`` and ``{"type": "image"}``.

    ``image(obj)`` may add keys to an image part (e.g. ``{"image": pil_image}`` for a processor);
    by default the part is the bare placeholder TRL fills from the ``images`` column."""
    messages = prompt.messages if isinstance(prompt, StatePrompt) else tuple(prompt)
    images = prompt.images if isinstance(prompt, StatePrompt) else ()
    out = []
    for message in messages:
        content = []
        for part in message.parts:
            if part.kind == TEXT:
                content.append({"type": "text", "text": part.text})
            else:
                extra = image(images[part.image_index]) if image and images else {}
                content.append({"type": "image", **extra})
        out.append({"role": message.role, "content": content})
    return out


def to_placeholder_messages(prompt: StatePrompt, *, image_token: str) -> list[dict]:
    """Messages whose content is one string, each image slot written as ``image_token`` in place (verl's RL dataset
    layout: its loader splits the content at ``<image>`` and takes the row's images in order). Roles and turns are
    kept as they are: no merging, unlike the sharegpt rendering."""
    return [
        {
            "role": message.role,
            "content": "".join(part.text if part.kind == TEXT else image_token for part in message.parts),
        }
        for message in prompt.messages
    ]


__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "PROMPT_DEFAULTS",
    "HistoryStep",
    "Message",
    "Part",
    "PromptError",
    "PromptSettings",
    "ReducedImage",
    "StatePrompt",
    "Trajectory",
    "action_space_text",
    "build_prompt",
    "build_state_messages",
    "build_trajectory",
    "instruction_text",
    "observation",
    "reduced_image",
    "render_step_on",
    "render_actions",
    "render_step",
    "render_target",
    "target_text",
    "text_message",
    "to_chat_messages",
    "to_placeholder_messages",
]
