"""Reads of replays: whether a correction is verified, the branches beside a trace, the counts per round."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.utils.translation import gettext_lazy

from replays.models import ReplayRequest, ReplayStatus
from traces.models import Project, Trace

VERIFIED = "verified"  # a branch with the correction succeeded in its environment
REFUTED = "refuted"  # every branch with the correction failed, and none is waiting
WAITING = "waiting"  # a request is queued or claimed, and no branch succeeded yet
NOT_REPLAYED = "not_replayed"  # asked for, but every request failed, timed out or was cancelled
VERIFICATIONS = (VERIFIED, REFUTED, WAITING, NOT_REPLAYED)
# The word a page shows for each standing, in the page's language.
VERIFICATION_WORDS = {
    VERIFIED: gettext_lazy("verified"),
    REFUTED: gettext_lazy("refuted"),
    WAITING: gettext_lazy("waiting"),
    NOT_REPLAYED: gettext_lazy("not replayed"),
}

_OPEN = (ReplayStatus.QUEUED, ReplayStatus.CLAIMED)


def verification_of(outcomes: Iterable[tuple[str, bool | None]]) -> str | None:
    """The one rule: a correction's standing from its requests' (status, success); None when never asked."""
    outcomes = list(outcomes)
    if not outcomes:
        return None
    if any(status == ReplayStatus.SUCCEEDED and success for status, success in outcomes):
        return VERIFIED
    if any(status in _OPEN for status, _ in outcomes):
        return WAITING
    if any(status == ReplayStatus.SUCCEEDED for status, _ in outcomes):
        return REFUTED
    return NOT_REPLAYED


def verifications(annotation_ids: Iterable[int]) -> dict[int, str]:
    """Annotation id -> its verification, for those with requests (of any version: the correction's text is what
    a replay tests, and an edited one is asked for again)."""
    rows: dict[int, list] = defaultdict(list)
    ids = list(annotation_ids)
    for chunk in range(0, len(ids), 5000):
        for annotation_id, status, success in ReplayRequest.objects.filter(
            annotation_id__in=ids[chunk : chunk + 5000]
        ).values_list("annotation_id", "status", "success"):
            rows[annotation_id].append((status, success))
    return {pk: v for pk, outcomes in rows.items() if (v := verification_of(outcomes)) is not None}


def verification_counts_by_round(project: Project) -> list[dict]:
    """Per round (None: traces of no round): how many corrections are verified, refuted and waiting."""
    per_annotation: dict[int, list] = defaultdict(list)
    round_of: dict[int, tuple] = {}
    for annotation_id, status, success, round_id, round_name in ReplayRequest.objects.filter(
        project=project
    ).values_list("annotation_id", "status", "success", "trace__round_id", "trace__round__name"):
        per_annotation[annotation_id].append((status, success))
        round_of[annotation_id] = (round_id, round_name)
    counts: dict[tuple, dict] = {}
    for annotation_id, outcomes in per_annotation.items():
        key = round_of[annotation_id]
        row = counts.setdefault(key, {"round": key[0], "round_name": key[1] or "", **dict.fromkeys(VERIFICATIONS, 0)})
        row[verification_of(outcomes)] += 1
    return sorted(counts.values(), key=lambda r: (r["round"] is None, r["round"] or 0))


def first_difference(parent: Trace, branch: Trace) -> int | None:
    """The first step where the branch differs from its parent (its action or screen), from τ on; None if none."""
    start = branch.branch_at or 1
    ours = {
        s.index: (s.action_text, s.screenshot_id)
        for s in branch.steps.filter(index__gte=start).only("index", "action_text", "screenshot_id")
    }
    theirs = {
        s.index: (s.action_text, s.screenshot_id)
        for s in parent.steps.filter(index__gte=start).only("index", "action_text", "screenshot_id")
    }
    for index in sorted(set(ours) | set(theirs)):
        if ours.get(index) != theirs.get(index):
            return index
    return None


def replays_of_trace(trace: Trace) -> list[ReplayRequest]:
    """The replay requests of a trace's corrections, newest first, with their branches."""
    return list(ReplayRequest.objects.filter(trace=trace).select_related("branch", "annotation").order_by("-id")[:50])


def branch_view(request: ReplayRequest) -> dict:
    """A branch beside its parent from τ on, for the trace and review pages: each step's recorded and branch action,
    the first that differs marked."""
    parent, branch = request.trace, request.branch
    rows = []
    differs_at = first_difference(parent, branch) if branch is not None else None
    if branch is not None:
        theirs = dict(parent.steps.filter(index__gte=request.tau).values_list("index", "action_text"))
        ours = dict(branch.steps.filter(index__gte=request.tau).values_list("index", "action_text"))
        for index in sorted(set(theirs) | set(ours)):
            rows.append(
                {
                    "index": index,
                    "recorded": theirs.get(index, ""),
                    "branch": ours.get(index, ""),
                    "first_difference": index == differs_at,
                }
            )
    return {"request": request, "rows": rows, "differs_at": differs_at}
