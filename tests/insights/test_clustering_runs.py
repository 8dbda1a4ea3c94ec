"""Clustering runs as jobs of the engine and the clusters page at any size: texts in any script, a text with no word,
a text clustering that fails all the same, one run per project however many start it at once, cancel and take-over
like any job, and a page of clusters whose merge target is found by name."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from insights import services
from insights.models import Cluster, ClusterRun
from studio import engine
from studio.jobs import job_cancel, job_start, jobs_watch_once
from studio.models import JobStatus
from tests.conftest import purge_broker
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import plant_wordings

# Two rewordings of one mistake in each of four scripts, and two texts with no word at all.
FAMILIES = {
    "english": [
        ("The search field is not focused yet: I typed before clicking it. Click the search field first.", "typed"),
        ("Typed before clicking the search field, which is not focused; click the search field first.", "focus"),
    ],
    "chinese": [
        ("搜索框还没有获得焦点：我在点击搜索框之前就输入了。先点击搜索框。", "先点击搜索框"),
        ("搜索框没有获得焦点，应该先点击搜索框再输入。", "没有先点击搜索框"),
    ],
    "japanese": [
        ("注文はまだ確定していません。確定ボタンを押してから終了してください。", "確定ボタンを押していない"),
        ("注文がまだ確定していないので、先に確定ボタンを押す必要があります。", "確定ボタン"),
    ],
    "russian": [
        ("Кнопка сохранения находится правее, я нажал не ту кнопку меню.", "нажал не ту кнопку"),
        ("Кнопка сохранения правее: я нажал не ту кнопку.", "не ту кнопку"),
    ],
}
WITHOUT_WORDS = [("!!! ???", "123"), ("", "42 %")]


def _wordings() -> list[tuple[str, str]]:
    return [w for family in FAMILIES.values() for w in family] + WITHOUT_WORDS


def test_texts_in_any_script_are_clustered_and_a_text_without_words_stays_alone():
    texts = [f"{thought}\n{note}" for thought, note in _wordings()]
    labels, method = services.text_clusters(texts)
    assert method.startswith("tf-idf")
    families = [labels[i : i + 2] for i in range(0, 8, 2)]
    assert all(a == b and a >= 0 for a, b in families), labels
    assert len({a for a, _ in families}) == 4, labels  # four mistakes, four clusters
    assert labels[8:] == [-1, -1]
    # The words of a script written without spaces are its character pairs; digits and punctuation are no words.
    assert services.text_tokens("先点击") == ["先点", "点击"]
    assert services.text_tokens("Кнопка, 123 !!") == ["кнопка"]
    assert services.text_tokens("!!! 123 ???") == []


@pytest.fixture
def in_scripts(project, annotator, lead, tmp_path):
    traces = make_traces(project, tmp_path, count=len(_wordings()), steps=3)
    return plant_wordings(project, traces, annotator=annotator, lead=lead, wordings=_wordings())


@pytest.fixture
def two_families(project, annotator, lead, tmp_path):
    """Four corrections: the English and the Chinese rewordings (cheaper than every script, where that is not the
    point)."""
    wordings = FAMILIES["english"] + FAMILIES["chinese"]
    traces = make_traces(project, tmp_path, count=len(wordings), steps=2)
    return plant_wordings(project, traces, annotator=annotator, lead=lead, wordings=wordings)


def _text_partition(run: ClusterRun) -> list[list[int]]:
    return sorted(sorted(c.annotation_ids) for c in run.clusters.filter(kind="text"))


def test_a_run_over_corrections_in_four_scripts_clusters_each_and_counts_the_texts_without_words(
    in_scripts, project, lead, client
):
    run = services.cluster_run_compute(run_id=services.cluster_run_create(project=project, user=lead, enqueue=False).pk)
    assert run.status == JobStatus.SUCCEEDED, run.message
    ids = [a.pk for a in in_scripts]
    assert _text_partition(run) == [sorted(ids[i : i + 2]) for i in range(0, 8, 2)]
    assert (run.corrections, run.without_words) == (10, 2)
    signature = run.clusters.get(kind="signature")  # plant_wordings: one category and action for all ten
    assert signature.size == 10
    assert "2 with no word to compare" in run.message and run.attempts == 1
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/clusters/").content.decode()
    assert "2 corrections had no word to compare" in page
    assert page.count('class="cluster card') == 5


def test_a_text_clustering_that_fails_keeps_the_signature_clusters_and_says_so_in_the_studio_s_words(
    two_families, project, lead, client, monkeypatch
):
    def refused(texts, **options):
        raise ValueError("Cosine affinity cannot be used when X contains zero vectors")

    monkeypatch.setattr(services, "text_clusters", refused)
    run = services.cluster_run_compute(run_id=services.cluster_run_create(project=project, user=lead, enqueue=False).pk)
    assert run.status == JobStatus.SUCCEEDED
    assert run.clusters.filter(kind="signature").count() == 1 and not run.clusters.filter(kind="text").exists()
    assert services.TEXT_CLUSTERING_FAILED in run.message
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/clusters/").content.decode()
    assert services.TEXT_CLUSTERING_FAILED in page and "Cosine" not in page


def test_before_the_first_run_the_clusters_api_answers_json_null(project, lead, api_client):
    answer = api_client(lead).get(f"/api/projects/{project.pk}/clusters/")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/json"
    assert answer.content == b"null" and answer.json() is None


@pytest.mark.django_db(transaction=True)
def test_twenty_starts_at_once_are_one_run(project, lead, role_groups):
    """Twenty requests start the project's clustering at the same moment: one run is made, every answer names it
    (SQLite serialises the writers; on PostgreSQL the partial unique constraint decides the race)."""
    from rest_framework.test import APIClient

    purge_broker()
    start = threading.Barrier(20)
    answers: list[tuple[int, int | None]] = []

    def post() -> None:
        try:
            client = APIClient()
            client.force_authenticate(lead)
            start.wait(10)
            answer = client.post(f"/api/projects/{project.pk}/clusters/")
            answers.append((answer.status_code, answer.json().get("id")))
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    purge_broker()
    runs = list(ClusterRun.objects.filter(project=project).values_list("pk", flat=True))
    assert len(runs) == 1, runs
    assert answers == [(202, runs[0])] * 20


def test_a_cluster_run_is_cancelled_like_any_job(project, lead, engineer, annotator, api_client, client):
    api = api_client(lead)
    queued = services.cluster_run_create(project=project, user=lead, enqueue=False)
    assert api_client(annotator).post(f"/api/cluster-runs/{queued.pk}/cancel/").status_code == 403
    cancelled = api.post(f"/api/cluster-runs/{queued.pk}/cancel/")
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["detail"] == "Cancelled before it started."
    assert api.post(f"/api/cluster-runs/{queued.pk}/cancel/").status_code == 409  # nothing more to cancel
    # Once ended, starting again makes a new run; the page's button cancels it too.
    again = services.cluster_run_create(project=project, user=lead, enqueue=False)
    assert again.pk != queued.pk
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/clusters/").content.decode()
    assert f'action="/cluster-runs/{again.pk}/cancel/"' in page
    assert client.post(f"/cluster-runs/{again.pk}/cancel/").status_code == 302
    again.refresh_from_db()
    assert again.status == JobStatus.CANCELLED


def test_a_cancel_while_it_runs_stops_it_at_its_next_stage_and_writes_no_cluster(
    two_families, project, lead, monkeypatch
):
    from insights import selectors

    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    read = selectors.correction_rows

    def read_then_cancelled(project):
        rows = read(project)
        changed, said = job_cancel(ClusterRun.objects.get(pk=run.pk))  # the lead's click while the worker reads
        assert changed and said.startswith("Cancel requested")
        return rows

    monkeypatch.setattr(selectors, "correction_rows", read_then_cancelled)
    ended = services.cluster_run_compute(run_id=run.pk)
    assert ended.status == JobStatus.CANCELLED and ended.message == "Cancelled on request."
    assert not Cluster.objects.exists()


def test_a_run_whose_worker_died_is_taken_over(two_families, project, lead, settings):
    kind = engine.job_kinds()["clustering"]
    assert kind.model == "insights.ClusterRun" and "insights.tasks.run_clustering" in kind.old_task_names
    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    assert job_start(run)  # a worker claimed it, then died: its heartbeat stops
    ClusterRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_S + 5)
    )
    purge_broker()
    assert ("insights.ClusterRun", run.pk, "resent") in jobs_watch_once()
    purge_broker()
    taken = engine.job_run_here(run, attempt=2)  # what the watchdog's message does on the next worker
    assert taken.status == JobStatus.SUCCEEDED and taken.attempts == 2, taken.message
    ids = [a.pk for a in two_families]
    assert _text_partition(taken) == [sorted(ids[:2]), sorted(ids[2:])]


def test_a_run_queued_by_an_older_release_under_the_old_task_name_still_runs(two_families, project, lead, monkeypatch):
    from studio.celery import app as celery_app

    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    celery_app.loader.import_default_modules()  # what a worker does at start
    celery_app.tasks["insights.tasks.run_clustering"].apply_async(args=[run.pk])
    run.refresh_from_db()
    assert run.status == JobStatus.SUCCEEDED and run.clusters.filter(kind="text").count() == 2, run.message


def test_the_migration_gives_an_old_running_run_a_heartbeat_for_the_watchdog(project):
    import importlib

    from django.apps import apps as django_apps

    migration = importlib.import_module("insights.migrations.0008_cluster_run_job")
    old = ClusterRun.objects.create(project=project, status="running")  # as the old lifecycle left it: no beat
    done = ClusterRun.objects.create(project=project, status="succeeded", message="kept")
    migration.to_jobs(django_apps, None)
    old.refresh_from_db()
    done.refresh_from_db()
    assert old.status == "running" and old.attempts == 1 and old.heartbeat_at is not None
    assert (done.status, done.message, done.attempts) == ("succeeded", "kept", 0)


# --- the clusters page at any number of clusters ----------------------------------------------------------------


def _many_clusters(project, count: int) -> ClusterRun:
    """A finished run of ``count`` signature clusters and two text clusters, made as rows (no corrections needed)."""
    run = ClusterRun.objects.create(project=project, status=JobStatus.SUCCEEDED, corrections=count * 3)
    Cluster.objects.bulk_create(
        [
            Cluster(run=run, kind="signature", name=f"click → type · {n} px · family {n}", size=1000 - n)
            for n in range(count)
        ]
        + [
            Cluster(run=run, kind="text", name="focused, search, field", size=40),
            Cluster(run=run, kind="text", name="order, confirmed, finish", size=30),
        ]
    )
    return run


def test_the_clusters_page_stays_small_at_any_number_of_clusters(project, lead, client):
    client.force_login(lead)
    sizes = {}
    for count in (60, 600):
        ClusterRun.objects.filter(project=project).delete()
        _many_clusters(project, count)
        page = client.get(f"/projects/{project.pk}/clusters/")
        assert page.status_code == 200
        body = page.content.decode()
        assert body.count('class="cluster card') == 25 and "<option" not in body
        assert f"{count + 2} clusters · page 1 of {-(-(count + 2) // 25)}" in body
        sizes[count] = len(page.content)
    # Ten times the clusters, the same page (the numbers in it grow by a digit here and there).
    assert sizes[600] < 60_000 and abs(sizes[600] - sizes[60]) < 600, sizes
    last = client.get(f"/projects/{project.pk}/clusters/", {"page": 25}).content.decode()
    assert last.count('class="cluster card') == 602 - 24 * 25 and 'rel="next"' not in last
    assert client.get(f"/projects/{project.pk}/clusters/", {"page": "²"}).status_code == 400


def test_the_merge_target_is_found_by_name(project, lead, api_client, client):
    run = _many_clusters(project, 60)
    into = run.clusters.get(name="click → type · 7 px · family 7")
    api = api_client(lead)
    every = api.get(f"/api/clusters/{into.pk}/merge/", {"q": "family"}).json()
    assert len(every) == 20 and every[0]["display_name"].endswith("family 0")  # largest first, twenty at most
    assert into.pk not in {c["id"] for c in every}
    found = api.get(f"/api/clusters/{into.pk}/merge/", {"q": "FAMILY 1"}).json()
    # Names holding "family" and "1" in any case: 1, 10 to 19, 21, 31, 41 and 51.
    assert len(found) == 15 and found[0]["display_name"] == "click → type · 1 px · family 1"
    assert all("family" in c["display_name"] and "1" in c["display_name"] for c in found)
    assert found[0]["choice"] == f"#{found[0]['id']} click → type · 1 px · family 1"
    text = run.clusters.get(name="focused, search, field")
    assert [c["display_name"] for c in api.get(f"/api/clusters/{text.pk}/merge/", {"q": ""}).json()] == [
        "order, confirmed, finish"
    ]
    client.force_login(lead)
    # A name only one other cluster has; a choice the list offered; a name several have, and one no cluster has.
    assert client.post(f"/clusters/{into.pk}/edit/", {"merge_with": "family 59", "page": "2"})["Location"].endswith(
        "?page=2"
    )
    assert client.post(f"/clusters/{into.pk}/edit/", {"merge_with": found[0]["choice"]}).status_code == 302
    into.refresh_from_db()
    assert into.merged and not run.clusters.filter(name__endswith="family 59").exists()
    assert not run.clusters.filter(name__endswith="family 1").exists()
    several = client.post(f"/clusters/{into.pk}/edit/", {"merge_with": "family 2"})
    assert several.status_code == 400 and "type more of the name" in several.content.decode()
    none = client.post(f"/clusters/{into.pk}/edit/", {"merge_with": "order confirmed"})
    assert none.status_code == 400 and "no other signature cluster" in none.content.decode()
    other_kind = client.post(f"/clusters/{into.pk}/edit/", {"merge_with": f"#{text.pk} focused, search, field"})
    assert other_kind.status_code == 400
    assert re.search(r"cluster \d+ is no other signature cluster", other_kind.content.decode())
