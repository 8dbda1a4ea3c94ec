"""Agreement between annotators who read the same trace independently (the project's double-annotation share).

For each trace with two or more standing (submitted or accepted) annotations, the first two by id form a pair:

- first-error step: each annotation's answer is "no error", "unusable" or "error at τ". Exact agreement means the
  same answer; within ±1 also counts two error answers whose τ differ by one.
- error category: Krippendorff's α (nominal), over pairs where both gave an error verdict (others are missing).
- action type: share of pairs that put the error at the same τ whose corrected actions have the same type.
- click distance: for those pairs, distance between the two corrected points in screen fractions,
  sqrt((Δx/W)² + (Δy/H)²) — 0 is the same point, 1 the full width (or height) apart.
- box IoU: for those pairs where both drew the element box of the corrected target, intersection over union of the
  two boxes (1 the same box, 0 no overlap). Computed in the project's convention: every convention scales each axis
  linearly from screen pixels, which leaves IoU unchanged.

A pair disagrees when its answers differ (exact), its categories differ or its action types differ; until the lead
adjudicates one annotation of the trace (is_adjudicated), it is listed for adjudication.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db.models import Q

from annotation.models import Annotation, AnnotationKind, Verdict
from annotation.selectors import target_box_of
from annotation.workflow import STANDING
from traces import grammar
from traces.models import Project, Step

PAIR_FIELDS = (
    "id",
    "trace_id",
    "trace__external_id",  # what the queue names a trace by (its id means nothing to a lead)
    "annotator__username",
    "status",
    "verdict",
    "tau",
    "error_category",
    "corrected_action",
    "editor_state",
    "is_adjudicated",
)  # read as named rows: row.verdict, row.tau, ...


class PairRow(Protocol):
    """One named row of PAIR_FIELDS (``values_list(*PAIR_FIELDS, named=True)``)."""

    id: int
    trace_id: int
    trace__external_id: str
    annotator__username: str
    status: str
    verdict: str
    tau: int | None
    error_category: str
    corrected_action: str
    editor_state: dict
    is_adjudicated: bool


@dataclass
class Pair:
    trace_id: int
    a: PairRow
    b: PairRow
    answers_exact: bool
    answers_within_one: bool
    category_differs: bool
    action_types: tuple[str | None, str | None] | None = None
    click_distance: float | None = None
    box_iou: float | None = None
    adjudicated: bool = False

    @property
    def disagrees(self) -> bool:
        differs_in_action = self.action_types is not None and self.action_types[0] != self.action_types[1]
        return not self.answers_exact or self.category_differs or differs_in_action

    def as_dict(self) -> dict:
        return {
            "trace_id": self.trace_id,
            "annotations": [_public(self.a), _public(self.b)],
            "answers_exact": self.answers_exact,
            "answers_within_one": self.answers_within_one,
            "category_differs": self.category_differs,
            "action_types": list(self.action_types) if self.action_types else None,
            "click_distance": None if self.click_distance is None else round(self.click_distance, 4),
            "box_iou": None if self.box_iou is None else round(self.box_iou, 4),
            "adjudicated": self.adjudicated,
        }


@dataclass
class AgreementReport:
    pairs: list[Pair] = field(default_factory=list)
    first_error_exact: float | None = None
    first_error_within_one: float | None = None
    category_alpha: float | None = None
    action_type_agreement: float | None = None
    action_type_pairs: int = 0
    click_distance_mean: float | None = None
    click_distance_median: float | None = None
    click_pairs: int = 0
    box_iou_mean: float | None = None
    box_iou_median: float | None = None
    box_pairs: int = 0

    @property
    def disagreements(self) -> list[Pair]:
        return [p for p in self.pairs if p.disagrees and not p.adjudicated]

    def as_dict(self, *, with_pairs: bool = False) -> dict:
        data: dict[str, Any] = {
            "pairs": len(self.pairs),
            "first_error_exact": _round(self.first_error_exact),
            "first_error_within_one": _round(self.first_error_within_one),
            "category_alpha": _round(self.category_alpha),
            "action_type_agreement": _round(self.action_type_agreement),
            "action_type_pairs": self.action_type_pairs,
            "click_distance_mean": _round(self.click_distance_mean),
            "click_distance_median": _round(self.click_distance_median),
            "click_pairs": self.click_pairs,
            "box_iou_mean": _round(self.box_iou_mean),
            "box_iou_median": _round(self.box_iou_median),
            "box_pairs": self.box_pairs,
            "open_disagreements": len(self.disagreements),
        }
        if with_pairs:
            data["disagreements"] = [p.as_dict() for p in self.disagreements]
        return data


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _public(row: PairRow) -> dict:
    return {
        "id": row.id,
        "annotator": row.annotator__username,
        "status": row.status,
        "verdict": row.verdict,
        "tau": row.tau,
        "error_category": row.error_category,
        "corrected_action": row.corrected_action,
        "is_adjudicated": row.is_adjudicated,
    }


def _answer(row) -> tuple:
    if row.verdict == Verdict.ERROR:
        return ("error", row.tau)
    return (row.verdict or "undecided",)


def _action(text: str) -> grammar.Action | None:
    try:
        return grammar.parse_action(text) if text and text.strip() else None
    except grammar.ActionSyntaxError:
        return None


def _click_distance(
    a: grammar.Action, b: grammar.Action, *, project: Project, size: tuple[int, int] | None
) -> float | None:
    pa, pb = a.point(), b.point()
    if pa is None or pb is None:
        return None
    if project.coordinate_convention == grammar.RELATIVE_1000:
        width, height = size or (1000, 1000)  # the convention is already a screen fraction ×1000
    elif size is None:
        return None  # pixel conventions need the screenshot's size
    else:
        width, height = size
    convention, max_pixels = project.coordinate_convention, project.max_pixels
    xa, ya = grammar.to_screen_pixels(pa, convention=convention, width=width, height=height, max_pixels=max_pixels)
    xb, yb = grammar.to_screen_pixels(pb, convention=convention, width=width, height=height, max_pixels=max_pixels)
    return math.hypot((xa - xb) / width, (ya - yb) / height)


def double_annotated_rows(project: Project, *, since=None, until=None) -> list:
    """Standing annotations of traces that two or more annotators answered, ordered by trace then id.

    ``since``/``until`` bound the submission time of the annotations that count. Only traces whose
    ``standing_annotations`` counter says two or more are read (a small, indexed share of the project)."""
    # Production answers only: a gold trace's many scored answers are no independent readings of the work.
    standing = Q(
        project=project, status__in=STANDING, kind=AnnotationKind.PRODUCTION, trace__standing_annotations__gte=2
    )
    if since is not None:
        standing &= Q(submitted_at__gte=since)
    if until is not None:
        standing &= Q(submitted_at__lt=until)
    rows = list(Annotation.objects.filter(standing).order_by("trace_id", "id").values_list(*PAIR_FIELDS, named=True))
    per_trace = Counter(row.trace_id for row in rows)  # within the range a trace may keep only one
    return [row for row in rows if per_trace[row.trace_id] >= 2]


def agreement_report(project: Project, *, since=None, until=None) -> AgreementReport:
    rows = double_annotated_rows(project, since=since, until=until)
    by_trace: dict[int, list] = {}
    for row in rows:
        by_trace.setdefault(row.trace_id, []).append(row)
    report = AgreementReport()
    same_tau: list[tuple[int, int]] = []
    for trace_id, group in by_trace.items():
        a, b = group[0], group[1]
        ans_a, ans_b = _answer(a), _answer(b)
        within = ans_a == ans_b or (
            ans_a[0] == ans_b[0] == "error" and None not in (ans_a[1], ans_b[1]) and abs(ans_a[1] - ans_b[1]) <= 1
        )
        both_error = ans_a[0] == ans_b[0] == "error"
        pair = Pair(
            trace_id=trace_id,
            a=a,
            b=b,
            answers_exact=ans_a == ans_b,
            answers_within_one=within,
            category_differs=both_error and a.error_category != b.error_category,
            adjudicated=any(r.is_adjudicated for r in group),
        )
        if both_error and a.tau == b.tau:
            same_tau.append((trace_id, a.tau))
        report.pairs.append(pair)
    if not report.pairs:
        return report
    n = len(report.pairs)
    report.first_error_exact = sum(p.answers_exact for p in report.pairs) / n
    report.first_error_within_one = sum(p.answers_within_one for p in report.pairs) / n
    report.category_alpha = _category_alpha(report.pairs)
    _compare_corrections(report, project, dict(same_tau))
    return report


def _category_alpha(pairs: list[Pair]) -> float | None:
    categories = sorted(
        {r.error_category for p in pairs for r in (p.a, p.b) if r.verdict == Verdict.ERROR and r.error_category}
    )
    if not categories:
        return None
    code = {c: i for i, c in enumerate(categories)}
    # Imported here, not at start: numpy and krippendorff (~14 MB per process) serve this dashboard figure only.
    import krippendorff
    import numpy as np

    def value(row):
        if row.verdict == Verdict.ERROR and row.error_category:
            return code[row.error_category]
        return np.nan

    data = np.array([[value(p.a) for p in pairs], [value(p.b) for p in pairs]], dtype=float)
    pairable = ~np.isnan(data).any(axis=0)
    if pairable.sum() < 1 or len(categories) < 2:
        # α is undefined when nothing varies (one category only): report full agreement only if pairs exist.
        return 1.0 if pairable.sum() >= 1 else None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def _compare_corrections(report: AgreementReport, project: Project, tau_by_trace: dict[int, int]) -> None:
    if not tau_by_trace:
        return
    sizes = {}
    if project.coordinate_convention != grammar.RELATIVE_1000:  # relative points are screen fractions already
        sizes = {
            (t, i): (w, h)
            for t, i, w, h in Step.objects.filter(
                trace_id__in=list(tau_by_trace),
                screenshot__isnull=False,
            ).values_list("trace_id", "index", "screenshot__width", "screenshot__height")
            if tau_by_trace.get(t) == i
        }
    matches, distances, ious = [], [], []
    for pair in report.pairs:
        tau = tau_by_trace.get(pair.trace_id)
        if tau is None:
            continue
        act_a, act_b = _action(pair.a.corrected_action), _action(pair.b.corrected_action)
        if act_a is None or act_b is None:
            continue
        pair.action_types = (act_a.type, act_b.type)
        matches.append(act_a.type == act_b.type)
        distance = _click_distance(act_a, act_b, project=project, size=sizes.get((pair.trace_id, tau)))
        if distance is not None:
            pair.click_distance = distance
            distances.append(distance)
        boxes = [
            target_box_of(row.editor_state, row.corrected_action, "corrected", box_tokens=project.box_tokens)
            for row in (pair.a, pair.b)
        ]
        if boxes[0] is not None and boxes[1] is not None:
            pair.box_iou = grammar.box_iou(boxes[0], boxes[1])
            ious.append(pair.box_iou)
    if matches:
        report.action_type_pairs = len(matches)
        report.action_type_agreement = sum(matches) / len(matches)
    if distances:
        report.click_pairs = len(distances)
        report.click_distance_mean = statistics.fmean(distances)
        report.click_distance_median = statistics.median(distances)
    if ious:
        report.box_pairs = len(ious)
        report.box_iou_mean = statistics.fmean(ious)
        report.box_iou_median = statistics.median(ious)
