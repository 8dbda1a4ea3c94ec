"""The replay loop in process (docs/runners.md): a failing run of the settings app pushed step by step, its first
step corrected and accepted, the reference runner claims the replay, restores the app, pushes the branch and
finishes with the environment's verdict; the correction stands verified, or refuted when it clicks elsewhere."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client

from annotation.models import Annotation, AnnotationStatus
from annotation.review.services import review_accept
from demo import settings_env
from demo.settings_env import correction_to, record_failing_run
from exports.services import export_to_path
from replays.models import ReplayRequest, ReplayStatus
from replays.selectors import REFUTED, VERIFIED, verifications
from replays.services import replay_policy_of
from trace_studio_cli.runner import replay_next
from traces.models import Step, Trace
from traces.selectors import traces_ready_to_annotate


class ClientTransport:
    """The runner's HTTP through a Django test client (multipart, as requests sends it)."""

    def __init__(self, client):
        self.client = client

    def post(self, path, data, files=None):
        payload = {k: v for k, v in data.items()}
        for key, (name, content) in (files or {}).items():
            upload = io.BytesIO(content)
            upload.name = name
            payload[key] = upload
        response = self.client.post(path, payload, format="multipart")
        return response.status_code, (response.json() if response.content else None)


def _accepted_correction(trace, annotator, lead, action: str) -> Annotation:
    answer = Annotation.objects.create(
        trace=trace,
        project=trace.project,
        annotator=annotator,
        status=AnnotationStatus.SUBMITTED,
        verdict="error",
        tau=1,
        corrected_thought="Dark mode is under Appearance.",
        corrected_action=action,
    )
    return review_accept(annotation_id=answer.pk, actor=lead)


@pytest.mark.heavy  # four exports after the loop: tens of seconds
@pytest.mark.django_db
def test_a_correction_is_verified_by_its_branch_and_a_wrong_one_refuted(
    project, annotator, lead, api_client, django_capture_on_commit_callbacks, tmp_path
):
    runner = ClientTransport(api_client(lead))
    record_failing_run(runner, project.pk, "settings-failing")
    original = Trace.objects.get(project=project, external_id="settings-failing")
    assert (original.step_count, original.outcome, original.receiving) == (2, "failure", False)

    # The project's rule asks for a replay of every accepted correction (the API; the settings page's form too).
    rule = api_client(lead).patch(
        f"/api/projects/{project.pk}/replays/policy/", {"every_accepted_correction": True}, format="json"
    )
    assert rule.json() == {"every_accepted_correction": True, "deadline_s": 3600, "lease_s": 300}
    with django_capture_on_commit_callbacks(execute=True):
        right = _accepted_correction(original, annotator, lead, correction_to("sidebar.appearance"))
    request = ReplayRequest.objects.get(annotation=right)
    assert (request.status, request.reason, request.tau) == (ReplayStatus.QUEUED, "rule", 1)

    finished = replay_next(runner, project.pk, "runner-a", settings_env)
    assert (finished["status"], finished["success"], finished["message"]) == ("succeeded", True, "dark mode is on")
    assert finished["verification"] == VERIFIED
    request.refresh_from_db()
    branch = request.branch
    assert (branch.parent_id, branch.branch_at, branch.outcome, branch.receiving) == (original.pk, 1, "success", False)
    # Corrected click, the switch, finished: three steps of its own (τ = 1: no shared prefix here).
    assert [s.action_text.split("(")[0] for s in branch.steps.order_by("index")] == ["click", "click", "finished"]
    assert replay_next(runner, project.pk, "runner-a", settings_env) is None  # nothing else waits: 204

    # A second failing run, corrected to the wrong page, asked for through the API.
    record_failing_run(runner, project.pk, "settings-failing-2")
    second = Trace.objects.get(project=project, external_id="settings-failing-2")
    browser = Client()
    browser.force_login(lead)
    assert 'id="replay-settings"' in browser.get(f"/projects/{project.pk}/settings/").content.decode()
    saved = browser.post(f"/projects/{project.pk}/replays/policy/", {"deadline_s": "600", "lease_s": "60"})
    assert saved.status_code == 302
    assert replay_policy_of(project).every_accepted_correction is False
    wrong = _accepted_correction(second, annotator, lead, correction_to("sidebar.sound"))
    asked = api_client(lead).post(f"/api/projects/{project.pk}/replays/", {"annotation": wrong.pk}, format="json")
    assert asked.status_code == 201, asked.json()
    again = api_client(lead).post(f"/api/projects/{project.pk}/replays/", {"annotation": wrong.pk}, format="json")
    assert (again.status_code, again.json()["id"]) == (200, asked.json()["id"])
    finished = replay_next(runner, project.pk, "runner-a", settings_env)
    assert (finished["success"], finished["verification"]) == (False, REFUTED)
    assert "dark mode is off" in finished["message"]
    assert verifications([right.pk, wrong.pk]) == {right.pk: VERIFIED, wrong.pk: REFUTED}

    # The trace page shows the branch beside the original from τ on, the first differing step marked.
    page = browser.get(f"/traces/{original.pk}/")
    html = page.content.decode()
    assert 'id="trace-replays"' in html and 'data-verification="verified"' in html
    assert "first-difference" in html
    review = browser.get(f"/reviews/{right.pk}/").content.decode()
    assert 'id="trace-replays"' in review and 'data-verification="verified"' in review

    # The refuted branch waits outside the annotation queue until a lead sends it there; a verified one is refused.
    refuted = ReplayRequest.objects.get(annotation=wrong)
    ready = traces_ready_to_annotate(Trace.objects.filter(pk=refuted.branch_id))
    assert not ready.exists()
    assert "Send this failed branch" in browser.get(f"/traces/{second.pk}/").content.decode()
    assert browser.post(f"/replays/{refuted.pk}/queue/").status_code == 302
    assert ready.exists()
    verified = api_client(lead).post(f"/api/replays/{request.pk}/queue/")
    assert (verified.status_code, "no failed branch" in verified.json()["detail"]) == (400, True)
    counts = api_client(lead).get(f"/api/projects/{project.pk}/replays/counts/").json()["rounds"]
    assert counts == [{"round": None, "round_name": "", "verified": 1, "refuted": 1, "waiting": 0, "not_replayed": 0}]

    # Into training: the refuted correction's DPO pair is left out by default; verified_only keeps the verified one.
    kept = {}
    weights = {"verified": 3, "refuted": 2}
    asked = (
        ("default", None),
        ("verified", {"verified_only": True}),
        ("branch", {"branch_steps": True}),
        ("weighted", {"verification_weights": weights, "refuted_dpo": True}),
    )
    manifests = {}
    for name, options in asked:
        job = export_to_path(project=project, user=lead, fmt="trl", options=options, out=tmp_path / f"{name}.zip")
        with zipfile.ZipFile(tmp_path / f"{name}.zip") as archive:
            manifest = json.loads(archive.read("manifest.json"))
        kept[name] = ({s["annotation_id"] for s in manifest["sources"]}, job.counts)
        manifests[name] = manifest
    sources, counts = kept["default"]
    assert sources == {right.pk, wrong.pk}
    assert counts["skipped_by_reason"].get("refuted_correction") == 1
    replays_behind = counts["replay_filter"].pop("replays")
    assert replays_behind == sorted(ReplayRequest.objects.values_list("pk", flat=True))
    assert counts["replay_filter"] == {
        "verified_only": False,
        "verified": 1,
        "refuted": 1,
        "waiting": 0,
        "not_replayed": 0,
        "never_asked": 0,
    }
    sources, counts = kept["verified"]
    assert sources == {right.pk} and counts["replay_filter"]["left_out"] == 1
    # The verified branch's own steps after τ (the switch, then finished) as on-policy SFT samples.
    assert kept["branch"][1]["by_kind"].get("replay_branch") == 2
    assert "replay_branch" not in kept["default"][1]["by_kind"]

    # Weighted by verification: each sample of the verified correction written 3 times, of the refuted one twice;
    # the manifest records the weights and counts the samples of each standing.
    default, weighted = manifests["default"]["counts"], manifests["weighted"]["counts"]
    assert manifests["weighted"]["filters"]["verification_weights"] == weights
    assert "verification_weights" not in manifests["default"]["filters"]
    plain = default["samples_by_verification"]
    assert plain["verified"] > 0 and plain["refuted"] > 0
    # The refuted correction's DPO pair, left out by default, is back with refuted_dpo: one more refuted sample.
    assert weighted["samples_by_verification"] == {
        "verified": 3 * plain["verified"],
        "refuted": 2 * (plain["refuted"] + 1),
    }
    assert sum(weighted["by_kind"].values()) == 3 * plain["verified"] + 2 * (plain["refuted"] + 1)
    refused = api_client(lead).post(
        f"/api/projects/{project.pk}/exports/",
        {"format": "trl", "options": {"verification_weights": {"verified": 0}}},
        format="json",
    )
    assert refused.status_code == 400 and "from 1 to 10" in str(refused.json()), refused.json()


@pytest.mark.django_db
def test_a_branch_shares_its_parents_steps_before_tau_without_new_screenshots(project, lead, api_client):
    runner = ClientTransport(api_client(lead))
    record_failing_run(runner, project.pk, "parent")
    parent = Trace.objects.get(project=project, external_id="parent")
    client = api_client(lead)
    step = '{"thought": "again", "action": "wait()"}'
    answer = client.post(
        f"/api/projects/{project.pk}/traces/branch-1/steps/",
        {"index": "2", "step": step, "parent": "parent", "branch_at": "2"},
        format="multipart",
    )
    assert answer.status_code == 201, answer.json()
    assert (answer.json()["parent"], answer.json()["branch_at"], answer.json()["step_count"]) == (parent.pk, 2, 2)
    shared = Step.objects.get(trace__external_id="branch-1", index=1)
    assert shared.screenshot_id == Step.objects.get(trace=parent, index=1).screenshot_id

    refused = {
        "no such parent": ({"index": "2", "step": step, "parent": "nothing", "branch_at": "2"}, 400, "no trace"),
        "a τ it lacks": ({"index": "3", "step": step, "parent": "parent", "branch_at": "3"}, 400, "no step 3"),
        "another first index": ({"index": "1", "step": step, "parent": "parent", "branch_at": "2"}, 409, "starts"),
    }
    for name, (data, code, words) in refused.items():
        got = client.post(f"/api/projects/{project.pk}/traces/branch-{name[:2]}/steps/", data, format="multipart")
        assert (got.status_code, words in got.json()["detail"]) == (code, True), (name, got.json())
    assert not Trace.objects.filter(external_id__startswith="branch-").exclude(external_id="branch-1").exists()
