"""Exports by annotator quality: ``min_gold_accuracy`` leaves out the accepted answers of annotators whose gold
accuracy is below the bar, and the manifest (counts, lineage), the README and the job's summary say how many and
whose."""

from __future__ import annotations

import json
import zipfile

import pytest

from annotation import services
from annotation.models import AnnotationKind, Verdict
from annotation.quality import services as quality
from annotation.review.services import review_accept
from exports.builders import ExportOptions, OptionsError
from exports.services import export_to_path
from studio.permissions import Role
from tests.fixtures_export import accepted_error
from tests.fixtures_quality import error_fields, gold_traces, hand_in, traces_of
from traces.services import membership_add


@pytest.fixture
def two_annotators(project, lead, make_user):
    people = {name: make_user(name, Role.ANNOTATOR) for name in ("good", "poor", "expert", "newbie")}
    for user in people.values():
        membership_add(project=project, user=user)
    gold_traces(project, traces_of(project, 2), expert=people["expert"], lead=lead)
    traces_of(project, 6, start=20)
    quality.quality_settings_save(project=project, user=lead, fields={"gold_every": 2})
    for name in ("good", "poor"):
        user = people[name]
        for _ in range(4):
            annotation, _ = services.lease_next_trace(user=user, project=project)
            right = name == "good" or annotation.kind == AnnotationKind.PRODUCTION
            hand_in(annotation, user, **(error_fields(3) if right else {"verdict": Verdict.NO_ERROR}))
            if annotation.kind == AnnotationKind.PRODUCTION:
                review_accept(annotation_id=annotation.pk, actor=lead)
    # An annotator without a gold answer yet: no accuracy, so no bar to fall under.
    accepted_error(traces_of(project, 1, start=40)[0], annotator=people["newbie"], reviewer=lead)
    return people


def test_the_quality_filter_leaves_out_the_poor_annotators_answers_and_says_so(
    project, engineer, two_annotators, tmp_path
):
    out = tmp_path / "bundle.zip"
    job = export_to_path(project=project, user=engineer, fmt="trl", options={"min_gold_accuracy": 0.8}, out=out)
    with zipfile.ZipFile(out) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        readme = archive.read("README.md").decode()
    account = manifest["counts"]["quality_filter"]
    assert account == manifest["lineage"]["left_out_by_quality"]
    assert account["left_out"] == 2 and account["min_gold_accuracy"] == 0.8
    assert [
        (a["annotator"], a["gold_right"], a["gold_answers"], a["answers_left_out"]) for a in account["annotators"]
    ] == [("poor", 0, 2, 2)]
    assert manifest["filters"]["min_gold_accuracy"] == 0.8
    sources = {s["annotation_id"] for s in manifest["sources"]}
    from annotation.models import Annotation

    poor = set(Annotation.objects.filter(annotator=two_annotators["poor"]).values_list("pk", flat=True))
    kept = set(
        Annotation.objects.filter(annotator__username__in=["good", "newbie", "expert"], status="accepted").values_list(
            "pk", flat=True
        )
    )
    # The newbie has no gold answer: no accuracy, kept; the expert's references are accepted answers like any.
    assert not sources & poor and sources == kept
    assert "Filtered by annotator quality: 2 accepted answers left out" in readme
    assert "2 left out by the quality filter" in job.message

    plain = export_to_path(project=project, user=engineer, fmt="trl", options=None, out=tmp_path / "all.zip")
    assert plain.counts["annotations"] == len(kept) + 2 and "quality_filter" not in plain.counts


@pytest.mark.parametrize("bar", [0, 1.5, "0.8", True, -0.1])
def test_a_bad_bar_is_refused_naming_the_option(bar):
    with pytest.raises(OptionsError, match="min_gold_accuracy must be a share in"):
        ExportOptions.parse({"min_gold_accuracy": bar})
    assert "min_gold_accuracy" not in ExportOptions.parse({}).to_json()
