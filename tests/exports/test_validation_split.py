"""The validation split of small bundles: with a fraction above 0 and 2 or more traces, one trace at
least goes to validation (seeded, by trace); otherwise the manifest, the README and the command line say that the
split is empty and why."""

from __future__ import annotations

import json
import zipfile

import pytest

from annotation.models import Verdict
from exports import services
from exports.builders import ExportOptions, split_of, validation_floor
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace


def _annotated(project, n, *, annotator, lead):
    trace = make_trace(
        project,
        replies=REPLIES,
        external_id=f"v{n}",
        instruction=f"Open the display settings ({n})",
        image_seed=n % 3 + 1,
    )
    return accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)


def test_the_floor_sends_the_lowest_scored_trace_to_validation_only_when_none_falls_there():
    options = ExportOptions(validation_fraction=0.1, split_seed=3)
    # Trace ids whose seeded scores all lie above 0.1: the split by score alone has no validation trace.
    ids = [t for t in range(1, 200) if split_of(t, options) == "train"][:5]
    floor = validation_floor(ids, options)
    assert floor in ids
    assert validation_floor(list(reversed(ids)), options) == floor  # by trace and seed, not by order
    chosen = ExportOptions(validation_fraction=0.1, split_seed=3, validation_trace=floor)
    assert [split_of(t, chosen) for t in ids].count("validation") == 1
    assert validation_floor(ids[:1], options) is None  # one trace cannot be split
    assert validation_floor(ids, ExportOptions(validation_fraction=0.0)) is None
    some_validation = next(t for t in range(1, 500) if split_of(t, options) == "validation")
    assert validation_floor([*ids, some_validation], options) is None


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
            assert f"trace {job.options['validation_trace']} (the lowest score) is the validation split" in readme


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
