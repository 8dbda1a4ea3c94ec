"""The validation split of small bundles: with a fraction above 0 and 2 or more traces that give samples of the
bundle's format, one such trace at least goes to validation (seeded, by trace); otherwise the manifest, the README
and the command line say that the split is empty and why."""

from __future__ import annotations

import json
import zipfile

import pytest

from annotation.models import Verdict
from exports import services
from exports.builders import ExportOptions, split_of, split_plan
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace


def _annotated(project, n, *, annotator, lead, corrected: bool = False):
    """An accepted answer on a trace of its own: "no error" (an SFT/DPO bundle without ``include_error_free`` takes no
    sample of it), or with ``corrected`` a first error at step 3 (an error-correction sample and a pair)."""
    trace = make_trace(
        project,
        replies=REPLIES,
        external_id=f"v{n}",
        instruction=f"Open the display settings ({n})",
        image_seed=n % 3 + 1,
    )
    if not corrected:
        return accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    return accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        error_category=project.error_categories[0],
        corrected_thought="Open Display instead.",
        corrected_action="click(start_box='(400,300)')",
    )


def test_the_floor_sends_the_lowest_scored_trace_to_validation_only_when_none_falls_there():
    options = ExportOptions(validation_fraction=0.1, split_seed=3)

    def floor(ids, options=options):
        return split_plan(ids, options, set).validation_trace  # every trace gives samples

    # Trace ids whose seeded scores all lie above 0.1: the split by score alone has no validation trace.
    ids = [t for t in range(1, 200) if split_of(t, options) == "train"][:5]
    assert floor(ids) in ids
    assert floor(list(reversed(ids))) == floor(ids)  # by trace and seed, not by order
    chosen = ExportOptions(validation_fraction=0.1, split_seed=3, validation_trace=floor(ids))
    assert [split_of(t, chosen) for t in ids].count("validation") == 1
    assert floor(ids[:1]) is None and split_plan(ids[:1], options, set).train_only  # one trace cannot be split
    assert floor(ids, ExportOptions(validation_fraction=0.0)) is None
    some_validation = next(t for t in range(1, 500) if split_of(t, options) == "validation")
    assert floor([*ids, some_validation]) is None
    # Among the traces that give samples: the lowest-scored trace giving none is passed over, and a lone trace
    # giving samples trains.
    lowest = floor(ids)
    assert split_plan(ids, options, lambda batch: set(batch) - {lowest}).validation_trace not in (None, lowest)
    assert split_plan(ids, options, lambda batch: set(batch) & {lowest}).train_only


@pytest.mark.django_db
def test_five_accepted_traces_at_a_tenth_give_a_validation_split(project, annotator, lead, tmp_path):
    for n in range(5):
        _annotated(project, n, annotator=annotator, lead=lead)
    for seed in range(6):  # whatever the seed, the split is never silently empty
        options = {"validation_fraction": 0.1, "split_seed": seed, "include_error_free": True}
        job = services.export_to_path(
            project=project, user=None, fmt="trl", options=options, out=tmp_path / f"{seed}.zip"
        )
        assert job.counts["by_split"].get("validation", 0) >= 1, (seed, job.counts)
        assert "validation_empty" not in job.counts
        with zipfile.ZipFile(tmp_path / f"{seed}.zip") as bundle:
            readme = bundle.read("README.md").decode()
        if job.options.get("validation_trace") is not None:
            chosen = job.options["validation_trace"]
            assert f"trace {chosen} (the lowest score among them) is the validation split" in readme


@pytest.mark.django_db
def test_an_empty_validation_split_is_said_with_its_reason(project, annotator, lead, tmp_path):
    _annotated(project, 0, annotator=annotator, lead=lead)
    options = {"validation_fraction": 0.1, "include_error_free": True}
    job = services.export_to_path(project=project, user=None, fmt="trl", options=options, out=tmp_path / "one.zip")
    reason = "the bundle holds 1 trace; a validation split needs 2 or more, so every sample trains"
    assert job.counts["validation_empty"] == reason
    with zipfile.ZipFile(tmp_path / "one.zip") as bundle:
        assert json.loads(bundle.read("manifest.json"))["counts"]["validation_empty"] == reason
        assert f"**the validation split is empty**: {reason}" in bundle.read("README.md").decode()
    _annotated(project, 1, annotator=annotator, lead=lead)
    off = {"validation_fraction": 0.0, "include_error_free": True}
    job = services.export_to_path(project=project, user=None, fmt="trl", options=off, out=tmp_path / "off.zip")
    assert job.counts["validation_empty"] == "validation_fraction is 0"


@pytest.mark.django_db
def test_a_one_trace_bundle_trains_even_when_its_seeded_score_says_validation(project, annotator, lead, tmp_path):
    """The split is seeded by trace id: a lone trace whose score falls under the fraction went to validation, leaving
    nothing to train on. One trace cannot be split, so it trains."""
    from exports.builders import ExportOptions, split_of

    annotation = _annotated(project, 0, annotator=annotator, lead=lead)
    seed = next(
        s
        for s in range(10_000)
        if split_of(annotation.trace_id, ExportOptions(validation_fraction=0.1, split_seed=s)) == "validation"
    )
    options = {"validation_fraction": 0.1, "include_error_free": True, "split_seed": seed}
    job = services.export_to_path(project=project, user=None, fmt="trl", options=options, out=tmp_path / "one.zip")
    assert job.counts["by_split"].get("validation", 0) == 0 and job.counts["by_split"]["train"] > 0
    assert "a validation split needs 2 or more" in job.counts["validation_empty"]


def _seed_where(condition, trace_ids, fraction):
    return next(
        seed
        for seed in range(20_000)
        if condition({t: split_of(t, ExportOptions(validation_fraction=fraction, split_seed=seed)) for t in trace_ids})
    )


@pytest.mark.django_db
def test_the_split_is_drawn_among_the_traces_that_give_samples_of_the_format(project, annotator, lead, tmp_path):
    """Six accepted traces, two of them corrected: a TRL bundle takes samples of those two only. Under a seed whose
    scores send a "no error" trace to validation and neither corrected one, the split was drawn before the samples
    were built and validation came out empty; it is drawn among the traces that give samples."""
    giving = [_annotated(project, n, annotator=annotator, lead=lead, corrected=True).trace_id for n in range(2)]
    silent = [_annotated(project, n, annotator=annotator, lead=lead).trace_id for n in range(2, 6)]
    seed = _seed_where(
        lambda split: any(split[t] == "validation" for t in silent) and all(split[t] == "train" for t in giving),
        giving + silent,
        0.2,
    )
    options = {"validation_fraction": 0.2, "split_seed": seed}
    job = services.export_to_path(project=project, user=None, fmt="trl", options=options, out=tmp_path / "b.zip")
    assert job.counts["by_split"].get("validation", 0) >= 1, job.counts
    assert "validation_empty" not in job.counts
    assert job.options["validation_trace"] in giving
    assert job.counts["by_split"]["train"] >= 1


@pytest.mark.django_db
def test_one_trace_giving_samples_trains_and_the_reason_says_so(project, annotator, lead, tmp_path):
    """Two accepted traces, only one of which gives samples of the format: one trace cannot be split, so it trains
    whatever its seeded score (it went to validation and left train empty), and the reason names the count."""
    giving = _annotated(project, 0, annotator=annotator, lead=lead, corrected=True).trace_id
    silent = _annotated(project, 1, annotator=annotator, lead=lead).trace_id
    seed = _seed_where(lambda split: split[giving] == "validation", [giving, silent], 0.1)
    options = {"validation_fraction": 0.1, "split_seed": seed}
    job = services.export_to_path(project=project, user=None, fmt="trl", options=options, out=tmp_path / "b.zip")
    assert job.counts["by_split"].get("validation", 0) == 0 and job.counts["by_split"]["train"] > 0
    reason = (
        "1 of the bundle's 2 traces gives samples of this format; a validation split needs 2 or more, "
        "so every sample trains"
    )
    assert job.counts["validation_empty"] == reason
