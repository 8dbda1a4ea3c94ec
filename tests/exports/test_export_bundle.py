"""Bundles: deterministic archives, manifest, formats' rules, API permissions, tokens and Range downloads."""

import io
import json
import zipfile

import pytest
from rest_framework.test import APIClient

from annotation.models import Verdict
from exports import services
from exports.models import ExportJob
from studio.security import api_token_issue
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace


@pytest.fixture
def annotated(project, annotator, lead):
    for n in range(6):
        # Screens shared by three traces each (stored once in the bundle), each trace its own task: a trace is known
        # by its content, so the same task on the same screens would be one trace.
        trace = make_trace(
            project,
            replies=REPLIES,
            external_id=f"t{n}",
            image_seed=n % 3 + 1,
            instruction=f"Open the display settings ({n})",
        )
        accepted_annotation(
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
    return project


def export(project, fmt, out, **options):
    return services.export_to_path(project=project, user=None, fmt=fmt, options=options or None, out=out)


@pytest.mark.django_db
def test_trl_bundle_is_complete_and_byte_identical(annotated, tmp_path):
    first = export(annotated, "trl", tmp_path / "a.zip", validation_fraction=0.3, split_seed=4)
    second = export(annotated, "trl", tmp_path / "b.zip", validation_fraction=0.3, split_seed=4)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
    assert first.bundle_sha256 == second.bundle_sha256
    with zipfile.ZipFile(tmp_path / "a.zip") as bundle:
        names = bundle.namelist()
        assert names == sorted(names)
        manifest = json.loads(bundle.read("manifest.json"))
        assert manifest["schema_version"] == 1 and manifest["format"] == "trl"
        assert manifest["counts"]["by_kind"] == {"error_correction": 6, "post_reflection": 6, "dpo": 6}
        assert len(manifest["sources"]) == 6 and all(s["version"] == 3 for s in manifest["sources"])
        assert set(manifest["files"]) == set(names) - {"manifest.json"}
        import hashlib

        for name, meta in manifest["files"].items():
            assert hashlib.sha256(bundle.read(name)).hexdigest() == meta["sha256"], name
        images = [n for n in names if n.startswith("images/")]
        assert (
            len(images) == len(set(images)) == 3 * 4
        )  # three image seeds × o_1..o_4 (the final screen is never needed here)
        for info in bundle.infolist():
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert info.compress_type == (
                zipfile.ZIP_STORED if info.filename.startswith("images/") else zipfile.ZIP_DEFLATED
            )
        assert "TRL" in bundle.read("README.md").decode()
        splits = {}
        for name in names:
            if name.endswith(".jsonl"):
                for line in bundle.read(name).decode().splitlines():
                    record = json.loads(line)
                    placeholders = sum(c["type"] == "image" for m in record["prompt"] for c in m["content"])
                    assert placeholders == len(record["images"]) and all(p in names for p in record["images"])
                    splits.setdefault(record["trace_id"], set()).add(name.split("/")[2].split("-")[0])
        assert all(len(s) == 1 for s in splits.values())  # split by trace


@pytest.mark.django_db
def test_llamafactory_records_follow_its_rules(annotated, tmp_path):
    export(annotated, "llamafactory", tmp_path / "lf.zip", validation_fraction=0)
    with zipfile.ZipFile(tmp_path / "lf.zip") as bundle:
        info = json.loads(bundle.read("dataset_info.json"))
        assert info["uitars_dpo_train-00000-of-00001"]["ranking"] is True
        assert info["uitars_sft_train-00000-of-00001"]["columns"] == {"messages": "conversations", "images": "images"}
        for entry in info.values():
            records = json.loads(bundle.read(entry["file_name"]))
            assert records
            for record in records:
                turns = record["conversations"]
                assert turns[0]["from"] == "system"
                body = turns[1:]
                for i, turn in enumerate(body):
                    assert turn["from"] == ("human" if i % 2 == 0 else "gpt")
                tokens = sum(t["value"].count("<image>") for t in turns)
                if entry.get("ranking"):
                    assert len(body) % 2 == 1
                    assert set(record["chosen"]) == {"from", "value"} and record["chosen"]["from"] == "gpt"
                    assert record["rejected"]["from"] == "gpt" and record["chosen"] != record["rejected"]
                else:
                    assert len(body) % 2 == 0
                assert tokens == len(record["images"]) and all(p in bundle.namelist() for p in record["images"])


@pytest.mark.django_db
def test_parquet_loads_with_datasets(annotated, tmp_path):
    import datasets

    export(annotated, "parquet", tmp_path / "pq.zip", validation_fraction=0)
    with zipfile.ZipFile(tmp_path / "pq.zip") as bundle:
        bundle.extractall(tmp_path / "pq")
        assert not [n for n in bundle.namelist() if n.startswith("images/")]
    dpo = datasets.load_dataset(
        "parquet",
        data_files=str(tmp_path / "pq" / "data" / "dpo" / "train-00000-of-00001.parquet"),
        split="train",
        cache_dir=str(tmp_path / "cache"),
    )
    assert len(dpo) == 6
    row = dpo[0]
    # A row names its screenshots by sha256; each is stored once, in images.parquet.
    screenshots = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "pq" / "images.parquet"), split="train", cache_dir=str(tmp_path / "cache")
    )
    image_of = dict(zip(screenshots["sha256"], screenshots["image"]))
    assert image_of[row["images"][0]].size == (56, 42)
    assert sum(c["type"] == "image" for m in row["prompt"] for c in m["content"]) == len(row["images"])
    assert row["chosen"][0]["content"][0]["text"].startswith("Thought: Fix")


@pytest.mark.django_db
def test_api_roles_token_range_and_bad_input(annotated, annotator, engineer, api_client, tmp_path):
    assert api_client(annotator).get(f"/api/projects/{annotated.pk}/exports/").status_code == 403
    client = api_client(engineer)
    bad = client.post(
        f"/api/projects/{annotated.pk}/exports/", {"format": "trl", "options": {"nope": 1}}, format="json"
    )
    assert bad.status_code == 400 and "nope" in json.dumps(bad.json())
    bad = client.post(f"/api/projects/{annotated.pk}/exports/", {"format": "csv"}, format="json")
    assert bad.status_code == 400 and "format" in bad.json()
    created = client.post(f"/api/projects/{annotated.pk}/exports/", {"format": "trl"}, format="json")
    assert created.status_code == 202, created.content
    job_id = created.json()["id"]
    assert client.get(f"/api/exports/{job_id}/bundle").status_code == 409  # not built: nothing to download
    services.export_job_run(job_id=job_id)
    job = ExportJob.objects.get(pk=job_id)
    assert job.status == "succeeded", job.message
    assert api_client(annotator).get(f"/api/exports/{job_id}/bundle").status_code == 403

    token = api_token_issue(user=engineer)
    curl = APIClient()
    curl.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert APIClient().get(f"/api/exports/{job_id}/bundle").status_code in (401, 403)
    whole = curl.get(f"/api/exports/{job_id}/bundle", HTTP_ACCEPT="application/zip")
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "bytes"
    body = b"".join(whole.streaming_content)
    import hashlib

    assert hashlib.sha256(body).hexdigest() == job.bundle_sha256 and len(body) == job.bundle_size
    part = curl.get(f"/api/exports/{job_id}/bundle", HTTP_RANGE="bytes=10-109")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 10-109/{len(body)}"
    assert b"".join(part.streaming_content) == body[10:110]
    tail = curl.get(f"/api/exports/{job_id}/bundle", HTTP_RANGE="bytes=-22")
    assert b"".join(tail.streaming_content) == body[-22:]
    assert curl.get(f"/api/exports/{job_id}/bundle", HTTP_RANGE=f"bytes={len(body)}-").status_code == 416
    zipfile.ZipFile(io.BytesIO(body)).testzip()
    status = curl.get(f"/api/exports/{job_id}/").json()
    assert status["download_url"] == f"/api/exports/{job_id}/bundle" and status["counts"]["by_kind"]["dpo"] == 6
    done = curl.post(f"/api/exports/{job_id}/cancel/")
    assert done.status_code == 409


@pytest.mark.django_db
def test_cancel_before_start_and_pages(annotated, engineer, annotator, client):
    job = services.export_job_create(project=annotated, user=engineer, fmt="trl", enqueue=False)
    services.export_job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == "cancelled"
    assert services.export_job_run(job_id=job.pk).status == "cancelled"
    client.force_login(annotator)
    assert client.get("/exports/").status_code == 403
    assert b"/exports/" not in client.get("/projects/").content
    client.force_login(engineer)
    page = client.get("/exports/")
    assert page.status_code == 200 and b"Start export" in page.content
    response = client.post(
        "/exports/", {"project": annotated.pk, "format": "llamafactory", "validation_fraction": "0.2"}
    )
    assert response.status_code == 302
    new = ExportJob.objects.latest("id")
    assert new.format == "llamafactory" and new.options["validation_fraction"] == 0.2
    assert client.get(f"/exports/{new.pk}/").status_code == 200
    assert b"/account/token/" in page.content  # engineers get their API token there


@pytest.mark.django_db
def test_cancel_mid_run_leaves_no_bundle_and_failure_is_explained(annotated, engineer, monkeypatch):
    from exports import builders
    from exports.services import export_jobs

    job = services.export_job_create(project=annotated, user=engineer, fmt="trl", enqueue=False)
    real_plan = services.export_plan

    def plan_then_cancel(annotation_ids):
        ExportJob.objects.filter(pk=job.pk).update(cancel_requested=True)  # someone clicks Cancel meanwhile
        return real_plan(annotation_ids)

    monkeypatch.setattr(export_jobs, "export_plan", plan_then_cancel)
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "cancelled" and not job.bundle_name

    monkeypatch.setattr(export_jobs, "export_plan", real_plan)
    broken = services.export_job_create(project=annotated, user=engineer, fmt="trl", enqueue=False)

    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(builders.prompting, "build_state_messages", explode)
    broken = services.export_job_run(job_id=broken.pk)
    assert broken.status == "failed" and "disk full" in broken.message and not broken.bundle_name


@pytest.mark.django_db
def test_an_empty_bundle_says_why_it_is_empty(project, annotated, tmp_path):
    # A project with traces but nothing accepted: the export succeeds (a scheduled pipeline may run it) and its
    # message says the bundle is empty and why; a project with one accepted annotation counts it in the singular.
    empty_project = type(project).objects.create(name="Nothing accepted yet")
    make_trace(empty_project, replies=REPLIES, external_id="waiting")
    job = export(empty_project, "trl", tmp_path / "empty.zip")
    assert job.status == "succeeded"
    assert job.message.startswith("no samples from 0 accepted annotations; 0 skipped; the bundle is empty:")
    assert "no annotation of this project is accepted yet" in job.message
    held = export(
        annotated, "trl", tmp_path / "again.zip", since_export=export(annotated, "trl", tmp_path / "a.zip").pk
    )
    assert "the bundle is empty: every accepted annotation is already in the base export" in held.message
    assert "from 6 accepted annotations" in export(annotated, "trl", tmp_path / "b.zip").message
    assert (
        services.export_summary({"annotations": 1, "by_kind": {"dpo": 1}})
        == "1 dpo from 1 accepted annotation; 0 skipped"
    )


@pytest.mark.django_db
def test_the_export_form_offers_the_project_with_accepted_annotations_first(annotated, engineer, client):
    from traces.services import project_create

    # "Aardvark" sorts first but holds nothing to export: the form chose it by default, and an engineer exported
    # an empty bundle without noticing.
    idle = project_create(name="Aardvark", members=[engineer])
    client.force_login(engineer)
    page = client.get("/exports/").content.decode()
    assert f'<option value="{idle.pk}">Aardvark (0 accepted annotations)</option>' in page
    assert f'<option value="{annotated.pk}" selected>{annotated.name} (6 accepted annotations)</option>' in page
    refused = client.post("/exports/", {"project": idle.pk, "format": "trl", "validation_fraction": "x"})
    assert refused.status_code == 400 and f'<option value="{idle.pk}" selected>' in refused.content.decode()
