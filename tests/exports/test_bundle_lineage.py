"""Bundle lineage: every bundle keeps the (annotation id, version) pairs it was built from; two bundles
are compared (API, page, `bundle_diff` on ids and on downloaded zips); an export can hold only what changed since
an earlier one."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.management import call_command

from annotation.models import Verdict
from annotation.review.services import review_adjudicate
from exports import selectors, services
from exports.builders import OptionsError
from exports.models import ExportJob
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from traces.models import Trace
from traces.services import trace_delete


def _annotate(project, n, *, annotator, lead):
    trace = make_trace(
        project,
        replies=REPLIES,
        external_id=f"t{n}",
        image_seed=n % 3 + 1,
        instruction=f"Open the display settings ({n})",
    )
    return accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2 + n % 2,
        corrected_thought=f"Fix {n}.",
        corrected_action=f"click(start_box='({100 + n},200)')",
        reflection_thought="Recover.",
        reflection_action="hotkey(key='alt left')",
    )


@pytest.fixture
def two_rounds(project, annotator, lead, tmp_path):
    """Export 1 of four annotations; then one is edited by the lead, one trace deleted and two annotations added;
    export 2 of the whole project. Returns both jobs, their bundle paths and the annotations by role."""
    first = [_annotate(project, n, annotator=annotator, lead=lead) for n in range(4)]
    old = services.export_to_path(project=project, user=None, fmt="trl", options=None, out=tmp_path / "a.zip")
    edited = review_adjudicate(annotation_id=first[0].pk, actor=lead, edits={"corrected_thought": "Fix it better."})
    gone = first[1]
    trace_delete(trace=Trace.objects.get(pk=gone.trace_id), user=lead, reason="a duplicate recording")
    added = [_annotate(project, n, annotator=annotator, lead=lead) for n in (4, 5)]
    new = services.export_to_path(project=project, user=None, fmt="trl", options=None, out=tmp_path / "b.zip")
    return {
        "old": old,
        "new": new,
        "paths": (tmp_path / "a.zip", tmp_path / "b.zip"),
        "edited": (first[0].pk, first[0].version, edited.version),
        "gone": (gone.pk, gone.version),
        "added": sorted((a.pk, a.version) for a in added),
        "unchanged": 2,
    }


@pytest.mark.django_db
def test_each_bundle_keeps_its_lineage_on_the_job_and_in_its_manifest(two_rounds):
    new = two_rounds["new"]
    with zipfile.ZipFile(two_rounds["paths"][1]) as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
    assert new.sources == sorted([s["annotation_id"], s["version"]] for s in manifest["sources"])
    assert len(new.sources) == 5
    assert manifest["lineage"] == {
        "since_export": None,
        "already_exported": 0,
        "rounds": [{"id": None, "name": None, "annotations": 5}],
    }


@pytest.mark.django_db
def test_the_diff_lists_exactly_what_was_added_changed_and_removed(two_rounds, engineer, api_client, client):
    old, new = two_rounds["old"], two_rounds["new"]
    edited_pk, before, after = two_rounds["edited"]
    assert after > before
    expected = {
        "older": old.pk,
        "newer": new.pk,
        "added": [{"annotation_id": pk, "version": v} for pk, v in two_rounds["added"]],
        "removed": [{"annotation_id": two_rounds["gone"][0], "version": two_rounds["gone"][1]}],
        "changed": [{"annotation_id": edited_pk, "from_version": before, "to_version": after}],
        "unchanged": two_rounds["unchanged"],
        "in_base": [],
        "summary": "2 added, 1 changed, 1 removed, 2 unchanged",
    }
    api = api_client(engineer)
    assert api.get(f"/api/exports/{new.pk}/diff/?against={old.pk}").json() == expected
    assert api.get(f"/api/exports/{new.pk}/diff/").json() == expected  # the previous export by default
    # The older against the newer is the same diff turned around.
    back = api.get(f"/api/exports/{old.pk}/diff/?against={new.pk}").json()
    assert back["added"] == expected["removed"] and back["removed"] == expected["added"]
    first = api.get(f"/api/exports/{old.pk}/diff/")
    assert first.status_code == 400 and "no earlier finished export" in first.json()["detail"]

    client.force_login(engineer)
    page = client.get(f"/exports/{new.pk}/diff/").content.decode()
    assert "<strong>2</strong> added · <strong>1</strong> changed · <strong>1</strong> removed · 2 unchanged" in page
    assert f'data-annotation="{edited_pk}"' in page and f"{before} → {after}" in page
    assert "deleted" in page  # the removed annotation's trace is gone
    assert f'href="/exports/{new.pk}/diff/"' in client.get(f"/exports/{new.pk}/").content.decode()


@pytest.mark.django_db
def test_bundle_diff_command_on_ids_and_on_downloaded_bundles(two_rounds, capsys):
    old, new = two_rounds["old"], two_rounds["new"]
    call_command("bundle_diff", str(old.pk), str(new.pk))
    by_id = capsys.readouterr().out
    assert f"export {old.pk} -> export {new.pk}: 2 added, 1 changed, 1 removed, 2 unchanged" in by_id
    edited_pk, before, after = two_rounds["edited"]
    assert f"~ annotation {edited_pk} v{before} -> v{after}" in by_id
    call_command("bundle_diff", *map(str, two_rounds["paths"]), "--json")
    from_files = json.loads(capsys.readouterr().out)
    call_command("bundle_diff", str(old.pk), str(new.pk), "--json")
    from_ids = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in from_files.items() if k not in ("older", "newer")} == {
        k: v for k, v in from_ids.items() if k not in ("older", "newer")
    }
    with pytest.raises(Exception, match="neither an export id nor a bundle file"):
        call_command("bundle_diff", "nonsense", str(new.pk))


@pytest.mark.django_db
def test_an_incremental_export_holds_only_new_and_changed_annotations(two_rounds, tmp_path, capsys):
    old, new = two_rounds["old"], two_rounds["new"]
    since = services.export_to_path(
        project=old.project, user=None, fmt="trl", options={"since_export": old.pk}, out=tmp_path / "c.zip"
    )
    edited_pk = two_rounds["edited"][0]
    wanted = sorted({pk for pk, _ in two_rounds["added"]} | {edited_pk})
    assert sorted(pk for pk, _ in since.sources) == wanted
    with zipfile.ZipFile(tmp_path / "c.zip") as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
        names = bundle.namelist()
    assert manifest["lineage"]["since_export"]["id"] == old.pk
    assert manifest["lineage"]["already_exported"] == two_rounds["unchanged"]
    # Against its base, the incremental bundle removed only the deleted trace's annotation: the two it left out
    # because the base holds them are "already in the base" (not "removed").
    diff = selectors.export_diff(old, since)
    assert [pair for pair in diff.removed] == [two_rounds["gone"]]
    assert len(diff.in_base) == two_rounds["unchanged"]
    assert diff.summary == "2 added, 1 changed, 1 removed, 2 already in the base, 0 unchanged"
    call_command("bundle_diff", str(tmp_path / "a.zip"), str(tmp_path / "c.zip"))
    assert "1 removed, 2 already in the base, 0 unchanged" in capsys.readouterr().out
    assert manifest["counts"]["by_kind"]["dpo"] == 3 and "manifest.json" in names
    # An unknown base, an unfinished one and one without lineage are refused, each naming why.
    with pytest.raises(OptionsError, match="has no export 999999"):
        services.export_job_create(project=old.project, user=None, fmt="trl", options={"since_export": 999999})
    queued = services.export_job_create(project=old.project, user=None, fmt="trl", enqueue=False)
    with pytest.raises(OptionsError, match="is queued"):
        services.export_job_create(project=old.project, user=None, fmt="trl", options={"since_export": queued.pk})
    ExportJob.objects.filter(pk=new.pk).update(sources=None)
    with pytest.raises(OptionsError, match="before bundle lineage was kept"):
        services.export_job_create(project=old.project, user=None, fmt="trl", options={"since_export": new.pk})
    with pytest.raises(OptionsError, match="since_export must be"):
        services.export_job_create(project=old.project, user=None, fmt="trl", options={"since_export": "7"})


@pytest.mark.django_db
def test_the_api_refuses_a_bad_base_with_a_message(two_rounds, engineer, api_client):
    old = two_rounds["old"]
    api = api_client(engineer)
    answer = api.post(
        f"/api/projects/{old.project_id}/exports/",
        {"format": "trl", "options": {"since_export": 424242}},
        format="json",
    )
    assert answer.status_code == 400 and "has no export 424242" in json.dumps(answer.json())
    answer = api.post(
        f"/api/projects/{old.project_id}/exports/",
        {"format": "trl", "options": {"since_export": old.pk}},
        format="json",
    )
    assert answer.status_code == 202 and answer.json()["options"]["since_export"] == old.pk


@pytest.mark.django_db
def test_the_migration_fills_older_exports_lineage_from_their_stored_manifest(two_rounds):
    from importlib import import_module

    from django.apps import apps

    backfill = import_module("exports.migrations.0002_lineage").sources_from_manifests
    old, new = two_rounds["old"], two_rounds["new"]
    kept = list(old.sources)
    ExportJob.objects.filter(pk__in=[old.pk, new.pk]).update(sources=None)
    ExportJob.objects.filter(pk=new.pk).update(bundle_name="exports/gone.zip")  # deleted: its lineage stays unknown
    backfill(apps, None)
    assert ExportJob.objects.get(pk=old.pk).sources == kept
    assert ExportJob.objects.get(pk=new.pk).sources is None


@pytest.mark.django_db
def test_the_dataset_card_lists_the_rounds_and_checkpoints_of_its_annotations(project, annotator, lead, tmp_path):
    from datetime import UTC, datetime

    from traces.services import round_create

    week47 = round_create(
        project=project,
        name="week 47",
        checkpoint="ui-tars|r1",
        weights_hash="ab" * 32,
        ran_at=datetime(2026, 11, 17, tzinfo=UTC),
    )
    week48 = round_create(
        project=project, name="week 48", checkpoint="ui-tars-r2", ran_at=datetime(2026, 11, 24, tzinfo=UTC)
    )
    annotations = [_annotate(project, n, annotator=annotator, lead=lead) for n in range(4)]
    for annotation, round_ in zip(annotations, (week48, week47, week48, None)):
        Trace.objects.filter(pk=annotation.trace_id).update(round=round_)
    services.export_to_path(project=project, user=None, fmt="llamafactory", options=None, out=tmp_path / "r.zip")
    with zipfile.ZipFile(tmp_path / "r.zip") as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
        readme = bundle.read("README.md").decode()
    assert [(r["name"], r.get("checkpoint"), r["annotations"]) for r in manifest["lineage"]["rounds"]] == [
        ("week 47", "ui-tars|r1", 1),
        ("week 48", "ui-tars-r2", 2),
        (None, None, 1),
    ]
    assert "| week 47 | ui-tars\\|r1 | `abababababab…` | 2026-11-17T00:00:00+00:00 | 1 |" in readme
    assert "| week 48 | ui-tars-r2 | – | 2026-11-24T00:00:00+00:00 | 2 |" in readme
    assert "| (no round) | – | – | – | 1 |" in readme
