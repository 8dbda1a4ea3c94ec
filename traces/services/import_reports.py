"""What an import says: its entry for each trace kept with a note (off-screen points, a distinct id, already
present, no instruction) and the job's summary."""

from __future__ import annotations

from django.utils.translation import gettext, ngettext

from traces.importers import ImportedTrace, ImportWarning, WarningCode
from traces.models import ImportJob, Trace
from traces.selectors import (
    ALREADY_PRESENT,
    INSTRUCTION_MISSING,
    OFF_SCREEN_POINT,
    STORED_UNDER_DISTINCT_ID,
    import_job_report,
    traces_awaiting_instruction,
)


def import_job_summary(job: ImportJob) -> str:
    """The job's message when it ran to its end: what was lost first (a lead must not read "succeeded" past five
    failed traces), then the counts. Notes on kept traces are counted by what they say (awaiting an instruction,
    off-screen steps), never as errors."""
    awaiting = traces_awaiting_instruction(job.traces.all()).count()
    report = import_job_report(job)
    attention = report.attention
    distinct = sum(note.get("kind") == STORED_UNDER_DISTINCT_ID for note in report.notes)
    # Worded in the job's language (studio.engine runs a job in its requester's): a phrase per count.
    parts = [
        ngettext("%(count)s trace", "%(count)s traces", job.traces_imported) % {"count": job.traces_imported},
        ngettext("%(count)s step", "%(count)s steps", job.steps_imported) % {"count": job.steps_imported},
        ngettext("%(count)s screenshot stored", "%(count)s screenshots stored", job.screenshots_stored)
        % {"count": job.screenshots_stored},
        ngettext("%(count)s trace already present", "%(count)s traces already present", job.traces_skipped)
        % {"count": job.traces_skipped},
        gettext("%(count)s failed") % {"count": job.traces_failed},
        ngettext("%(count)s unparsed action", "%(count)s unparsed actions", job.unparsed_actions)
        % {"count": job.unparsed_actions},
        off_screen_phrase(job.off_screen_steps),
    ]
    if awaiting:
        parts.append(gettext("%(count)s awaiting an instruction") % {"count": awaiting})
    if distinct:
        parts.append(
            gettext("%(count)s stored under a distinct id (its own was taken by other content)") % {"count": distinct}
        )
    counts = gettext(", ").join(parts)
    return gettext("%(lost)s. %(counts)s") % {"lost": attention, "counts": counts} if attention else counts


def off_screen_phrase(count: int) -> str:
    return ngettext("%(count)s off-screen step", "%(count)s off-screen steps", count) % {"count": count}


OFF_SCREEN_LISTED = 5  # steps named in one trace's entry; the trace page lists them all


def trace_off_screen_steps(trace: Trace) -> list[tuple[int, str]]:
    return list(trace.steps.exclude(off_screen_point="").order_by("index").values_list("index", "off_screen_point"))


def off_screen_report(imported: ImportedTrace, trace: Trace, off_screen: list[tuple[int, str]]) -> dict:
    """The job's entry for a trace with recorded points off the screen: which steps, why, and what follows (shown
    to annotators, never trained on unless corrected)."""
    where = imported.source_path or imported.external_id
    named = gettext("; ").join(
        gettext("step %(index)s: %(why)s") % {"index": index, "why": why}
        for index, why in off_screen[:OFF_SCREEN_LISTED]
    )
    more = len(off_screen) - OFF_SCREEN_LISTED
    listed = named + (
        gettext("; and %(more)s more steps, listed on the trace page") % {"more": more} if more > 0 else ""
    )
    return {
        "file": where,
        "kind": OFF_SCREEN_POINT,
        "trace": trace.pk,
        "steps": [index for index, _ in off_screen],
        "error": gettext(
            "%(file)s: %(steps)s (%(listed)s); annotators see the step flagged, and exports never train on it unless "
            "the annotator corrects it"
        )
        % {"file": where, "steps": off_screen_phrase(len(off_screen)), "listed": listed},
    }


def distinct_id_report(imported: ImportedTrace, trace: Trace, differs: str) -> dict:
    """The job's entry for a trace stored under a distinct external_id: its own names another trace of the project,
    whose content differs (two traces are never merged)."""
    where = imported.source_path or imported.external_id
    return {
        "file": where,
        "kind": STORED_UNDER_DISTINCT_ID,
        "trace": trace.pk,
        "error": gettext("%(file)s: stored as %(id)s, because %(differs)s")
        % {"file": where, "id": repr(trace.external_id), "differs": differs},
    }


def already_present_report(imported: ImportedTrace, trace: Trace) -> dict:
    """The job's entry for a trace whose content the project holds under another external_id (another folder or zip
    name): nothing was stored."""
    where = imported.source_path or imported.external_id
    return {
        "file": where,
        "kind": ALREADY_PRESENT,
        "trace": trace.pk,
        "error": gettext(
            "%(file)s: already present as trace %(id)s (the same instruction, screenshots and actions); nothing stored"
        )
        % {"file": where, "id": repr(trace.external_id)},
    }


def instruction_missing_report(imported: ImportedTrace, trace: Trace) -> dict:
    """The job's entry for a trace stored without its instruction: what is missing, what the importer said about
    where it looked, and what happens now (kept out of the queue until a lead writes it on the trace page)."""
    where = imported.source_path or imported.external_id
    # Selected by code: the words are the requester's language and may be reworded; a warning that only mentions
    # an instruction (a screenshot's) is not about this.
    said = [
        w.text for w in imported.warnings if isinstance(w, ImportWarning) and w.code == WarningCode.INSTRUCTION_MISSING
    ]
    return {
        "file": where,
        "kind": INSTRUCTION_MISSING,
        "trace": trace.pk,
        "error": (
            gettext("%(file)s: no instruction found in the source") % {"file": where}
            + (gettext(" (%(said)s)") % {"said": gettext("; ").join(said)} if said else "")
            + gettext(
                "; the trace is kept out of the annotation queue until a lead writes its instruction on the trace page"
            )
        ),
    }
