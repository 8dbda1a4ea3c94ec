"""The upload endpoint end to end: a lead uploads a zip, a REAL Celery worker imports it, the job is polled."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from PIL import Image, ImageDraw
from rest_framework.test import APIClient

from tests.conftest import TEST_PASSWORD, wait_for
from traces.models import ImportJob, Step, Trace


def archive(*external_ids: str, broken: str = "") -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for external_id in (*external_ids, *([broken] if broken else [])):
            steps = []
            for n in (1, 2):
                image = Image.new("RGB", (160, 90), (255, 255, 255))
                ImageDraw.Draw(image).text((5, 5), f"{external_id} {n}", fill=(0, 0, 0))
                out = io.BytesIO()
                image.save(out, format="PNG")
                zf.writestr(f"upload/{external_id}/s{n}.png", out.getvalue())
                steps.append({"screenshot": f"s{n}.png", "thought": "t", "action": "click(start_box='(10,20)')"})
            document = {"external_id": external_id, "instruction": f"Do {external_id}", "steps": steps}
            text = json.dumps(document)
            if external_id == broken:
                text = text[:-5]
            zf.writestr(f"upload/{external_id}/trace.json", text)
    buffer.seek(0)
    buffer.name = "upload.zip"
    return buffer


def upload(client, project, data=None):
    return client.post(f"/api/projects/{project.pk}/imports/", {"file": data or archive("a")}, format="multipart")


@pytest.mark.worker
def test_lead_upload_is_imported_by_a_real_worker(project, lead, api_client, celery_worker):
    client = api_client(lead)
    response = upload(client, project, archive("a", "b", broken="c"))
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    assert response.json()["status"] == "queued"

    def finished():
        body = client.get(f"/api/imports/{job_id}/").json()
        return body if body["status"] in ("succeeded", "failed", "cancelled") else None

    body = wait_for(finished, timeout=90, message="the import job to finish")
    assert body["status"] == "succeeded", (body, "".join(celery_worker.log[-30:]))
    assert (body["traces_imported"], body["steps_imported"], body["traces_failed"]) == (2, 4, 1)
    assert body["errors"][0]["error"].startswith("c/trace.json: invalid JSON at line 1 column")
    assert sorted(Trace.objects.filter(project=project).values_list("external_id", flat=True)) == ["a", "b"]
    assert Step.objects.filter(trace__project=project).count() == 4
    assert ImportJob.objects.get(pk=job_id).traces.count() == 2


def test_annotator_is_refused(project, annotator, api_client):
    response = upload(api_client(annotator), project)
    assert response.status_code == 403
    assert not ImportJob.objects.exists()


def test_non_member_sees_no_project(project, make_user, api_client):
    from studio.permissions import Role

    outsider = make_user("outsider", Role.LEAD)
    response = upload(api_client(outsider), project)
    assert response.status_code == 404
    assert not ImportJob.objects.exists()


def test_session_post_without_csrf_token_is_refused(project, lead):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username=lead.username, password=TEST_PASSWORD)
    response = upload(client, project)
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not ImportJob.objects.exists()


def test_wrong_file_type_is_a_clear_400(project, lead, api_client):
    data = io.BytesIO(b"not an archive")
    data.name = "notes.txt"
    response = api_client(lead).post(f"/api/projects/{project.pk}/imports/", {"file": data}, format="multipart")
    assert response.status_code == 400
    assert "notes.txt: upload a .zip archive or a .jsonl file" in json.dumps(response.json())
