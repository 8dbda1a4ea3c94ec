"""The upgrade drill's data, made and used through whichever release's code runs it (tests/serving/
test_upgrade_drill.py): ``python upgrade_world.py PHASE ...`` with the checkout of that release as the working
directory. It uses only what every release keeps: management commands, the REST API through Django's test client
and the project's name. Prints one JSON line.

- ``before TRACES OUT``: people, a project, the traces imported, an annotation handed in and accepted, a draft
  (saved twice) and a trl bundle at OUT.
- ``serving``: what the previous release does while the new release's migrations are applied, each an insert into a
  table those migrations add columns to: a second annotator claims a trace (a new annotation), saves its draft and
  hands it in (the answer indexed for search), and the lead starts a clustering run.
- ``after DRAFT VERSION OUT``: the draft saved before the upgrade handed in, and a trl bundle at OUT.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.getcwd())  # the release under test, not the checkout this file lies in
# An editable install of this checkout adds a finder that resolves any submodule of the studio's packages missing from
# the release (a module this checkout added, e.g. an app's jobs.py found by autodiscovery) to this checkout's file:
# the release would run a mix of both. Without it, only the release's own files are found.
sys.meta_path[:] = [
    finder for finder in sys.meta_path if not getattr(finder, "__module__", "").startswith("__editable__")
]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

PROJECT = "Upgrade drill"
CLICK = {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}
ANSWER = {
    "error_category": "wrong element / grounding",
    "corrected_thought": "Click Settings instead.",
    "reflection_thought": "I clicked the wrong item; go back.",
    "editor_state": {"corrected": CLICK, "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"}},
}


def client_for(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def answered(response, status: int = 200) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json()


def project_id() -> int:
    from traces.models import Project

    return Project.objects.get(name=PROJECT).pk


def draft_two_versions(annotator: Client) -> int:
    pk = answered(annotator.post(f"/api/projects/{project_id()}/next-trace/"))["annotation"]["id"]
    for version, fields in enumerate([{"verdict": "error", "tau": 2}, ANSWER], start=1):
        answered(annotator.put(f"/api/annotations/{pk}/draft/", {"version": version, **fields}, "application/json"))
    return pk


def before(traces: str, out: str) -> dict:
    people = (("lead", "lead"), ("annotator", "annotator"), ("annotator2", "annotator"), ("engineer", "engineer"))
    for name, role in people:
        call_command("create_user", name, role=role, password_from_env="UPGRADE_PASSWORD")
    call_command("create_project", PROJECT, member=[name for name, _ in people])
    call_command("import_traces", traces, project=PROJECT)
    annotator, lead = client_for("annotator"), client_for("lead")
    accepted = draft_two_versions(annotator)
    answered(annotator.post(f"/api/annotations/{accepted}/submit/", {"version": 3}, "application/json"))
    assert answered(lead.post(f"/api/reviews/{accepted}/accept/", {}, "application/json"))["status"] == "accepted"
    draft = draft_two_versions(annotator)
    call_command("export_bundle", project=PROJECT, format="trl", out=out)
    return {"accepted": accepted, "draft": draft, "draft_version": 3}


def serving() -> dict:
    annotator = client_for("annotator2")
    draft = draft_two_versions(annotator)
    submitted = answered(annotator.post(f"/api/annotations/{draft}/submit/", {"version": 3}, "application/json"))
    run = answered(client_for("lead").post(f"/api/projects/{project_id()}/clusters/"), 202)
    return {
        "serving_draft": draft,
        "serving_submitted_status": submitted.get("status"),
        "serving_cluster_run": run["id"],
    }


def after(draft: str, version: str, out: str) -> dict:
    submitted = answered(
        client_for("annotator").post(f"/api/annotations/{draft}/submit/", {"version": int(version)}, "application/json")
    )
    call_command("export_bundle", project=PROJECT, format="trl", out=out)
    return {"submitted_status": submitted.get("status")}


if __name__ == "__main__":
    phase, *args = sys.argv[1:]
    result = {"before": before, "serving": serving, "after": after}[phase](*args)
    print(json.dumps(result))
