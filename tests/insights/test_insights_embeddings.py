"""Clusters of corrections by the pre-scoring model's own embeddings: with a model configured, the clustering runs on
the ``gpu`` queue and compares the corrected thoughts and notes by the model's mean-pooled, L2-normalised last hidden
states (the tiny random-weight checkpoint of prescoring.tiny, loaded like real weights); without one, by TF-IDF on
the ``default`` queue. The run records which, and the API and page show it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from insights import services
from insights.models import ClusterRun
from studio.jobs import job_cancel
from tests.conftest import WorkerProcess, purge_broker, wait_for
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import plant_wordings

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl  # noqa: E402
from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

# Two mistakes, each reworded four ways (one word changes): the families the clustering must find.
TYPED_FIRST = (
    "The search {w} is not focused yet: I typed before clicking the {w}. Click the search {w} first.",
    "typed before clicking the {w}",
)
FINISHED_EARLY = (
    "The order in {w} is not confirmed yet, so finishing now leaves the task undone.",
    "finished too early in {w}",
)
FIELDS = ("field", "box", "bar", "input")
APPS = ("Mail", "Maps", "Notes", "Files")


def wordings() -> list[tuple[str, str]]:
    typed = [(TYPED_FIRST[0].format(w=w), TYPED_FIRST[1].format(w=w)) for w in FIELDS]
    finished = [(FINISHED_EARLY[0].format(w=w), FINISHED_EARLY[1].format(w=w)) for w in APPS]
    return typed + finished


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-qwen2vl-embeddings") / "agent-embed")


@pytest.fixture
def scorer(tiny_model):
    return qwen2vl.load_scorer(tiny_model, device="cpu")


def forward_shapes(scorer):
    """The (rows, columns) of every decoder pass while the returned list is in use: a hook on the real model."""
    shapes: list[tuple[int, int]] = []

    def record(module, args, kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))

    return shapes, scorer.model.model.register_forward_pre_hook(record, with_kwargs=True)


def test_text_embeddings_are_deterministic_unit_vectors_and_batching_changes_nothing(scorer):
    texts = [t for pair in wordings() for t in pair] + ["", "Click.", "a much longer thought " * 40]
    assert scorer.dtype == torch.float32 and scorer.device == "cpu"
    one_by_one = scorer.text_embeddings(texts, batch_size=1)
    batched = scorer.text_embeddings(texts, batch_size=5)
    again = scorer.text_embeddings(texts, batch_size=5)
    hidden = scorer.model.config.get_text_config().hidden_size
    assert one_by_one.dtype == np.float32 and one_by_one.shape == (len(texts), hidden)
    assert np.array_equal(batched, again)  # deterministic
    assert np.abs(batched - one_by_one).max() <= 1e-5
    norms = np.linalg.norm(batched, axis=1)
    empty = texts.index("")
    assert norms[empty] == 0 and np.allclose(np.delete(norms, empty), 1.0, atol=1e-5)
    # A text's vector does not depend on its neighbours in the batch or on the order of the texts.
    reordered = scorer.text_embeddings(texts[::-1], batch_size=5)[::-1]
    assert np.abs(reordered - batched).max() <= 1e-5
    # Distinct texts, distinct vectors.
    assert len({row.tobytes() for row in np.delete(batched, empty, axis=0)}) == len(texts) - 1


def test_text_embeddings_run_in_bounded_batches_of_bounded_tokens(scorer):
    texts = [t for pair in wordings() for t in pair] + ["a much longer thought " * 40]
    shapes, hook = forward_shapes(scorer)
    try:
        scorer.text_embeddings(texts, batch_size=4, max_tokens=24)
    finally:
        hook.remove()
    assert len(shapes) == math.ceil(len(texts) / 4)
    assert all(rows <= 4 and columns <= 24 for rows, columns in shapes), shapes
    assert max(columns for _, columns in shapes) == 24  # the long text was cut, not skipped
    # Texts that agree on their first max_tokens tokens get the same vector: only those tokens were read.
    long_a, long_b = "typed before clicking " * 20 + "alpha", "typed before clicking " * 20 + "omega"
    cut = scorer.text_embeddings([long_a, long_b], max_tokens=24)
    whole = scorer.text_embeddings([long_a, long_b], max_tokens=4096)
    assert np.array_equal(cut[0], cut[1]) and not np.allclose(whole[0], whole[1])


@pytest.fixture
def worded(db, project, annotator, lead, tmp_path):
    traces = make_traces(project, tmp_path, count=len(wordings()), steps=3)
    made = plant_wordings(project, traces, annotator=annotator, lead=lead, wordings=wordings())
    return {"typed": sorted(a.pk for a in made[: len(FIELDS)]), "finished": sorted(a.pk for a in made[len(FIELDS) :])}


def text_partition(run) -> list[list[int]]:
    return sorted(c.annotation_ids for c in run.clusters.filter(kind="text"))


def test_with_a_model_configured_the_clusters_come_from_its_embeddings_on_the_gpu_queue(
    worded, project, lead, settings, tiny_model, api_client, client
):
    settings.PRESCORE_MODEL_DIR = str(tiny_model)
    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    assert run.representation == ClusterRun.Representation.MODEL and run.model_path == str(tiny_model)
    assert services.cluster_run_queue(run) == "gpu"
    run = services.cluster_run_compute(run_id=run.pk)
    assert run.status == "succeeded", run.message
    assert run.corrections == 8 and run.method.startswith("agent-embed embeddings, average linkage")
    assert text_partition(run) == sorted([worded["typed"], worded["finished"]])
    # The clusters are still named by their distinctive words (TF-IDF): words, not dimensions.
    names = {tuple(c.annotation_ids): c.terms for c in run.clusters.filter(kind="text")}
    assert set(names[tuple(worded["typed"])]) & {"search", "clicking", "typed", "focused"}
    assert set(names[tuple(worded["finished"])]) & {"order", "confirmed", "finishing", "finished"}

    shown = api_client(lead).get(f"/api/projects/{project.pk}/clusters/").json()
    assert (shown["representation"], shown["model_name"]) == ("model", "agent-embed")
    client.force_login(lead)
    page = client.get(reverse("project-clusters", args=[project.pk])).content.decode()
    assert '<span id="cluster-representation">model embeddings of agent-embed</span>' in page


def test_without_a_model_the_clusters_come_from_tf_idf_on_the_default_queue(
    worded, project, lead, settings, api_client, client
):
    settings.PRESCORE_MODEL_DIR = ""
    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    assert (run.representation, run.model_path) == (ClusterRun.Representation.TFIDF, "")
    assert services.cluster_run_queue(run) == "default"
    run = services.cluster_run_compute(run_id=run.pk)
    assert run.status == "succeeded" and run.method == "tf-idf average linkage (scikit-learn)"
    # The word that differs between the first mistake's wordings comes four times in each, so in TF-IDF it outweighs
    # the words they share and those four stay apart: the same corrections, grouped otherwise than by the model.
    partition = text_partition(run)
    assert worded["finished"] in partition and worded["typed"] not in partition
    shown = api_client(lead).get(f"/api/projects/{project.pk}/clusters/").json()
    assert (shown["representation"], shown["model_name"]) == ("tfidf", "")
    client.force_login(lead)
    page = client.get(reverse("project-clusters", args=[project.pk])).content.decode()
    assert '<span id="cluster-representation">TF-IDF</span>' in page


def test_centred_embeddings_tell_apart_what_raw_cosines_would_join(scorer):
    """Why the embeddings are centred before the linkage: the tiny checkpoint's raw cosines between the two mistakes
    all pass the cut, so raw vectors would make one cluster of both."""
    texts = [f"{thought}\n{note}" for thought, note in wordings()]
    raw = scorer.text_embeddings(texts)
    across = raw[: len(FIELDS)] @ raw[len(FIELDS) :].T
    assert across.min() > services.EMBEDDING_SIMILARITY
    labels, method = services.text_clusters(texts, embed=scorer.text_embeddings, embedding_name="tiny")
    assert method.startswith("tiny embeddings")
    assert len(set(labels[: len(FIELDS)])) == 1 and len(set(labels[len(FIELDS) :])) == 1
    assert labels[0] != labels[-1]


def test_a_message_for_a_model_run_lands_on_the_gpu_queue(
    worded, project, lead, settings, tiny_model, django_capture_on_commit_callbacks
):
    if not django_settings.CELERY_BROKER_URL.startswith("filesystem"):
        pytest.skip("reads the embedded broker's queue folder (the worker test covers Redis)")
    folder = Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"])
    purge_broker()
    settings.PRESCORE_MODEL_DIR = str(tiny_model)
    with django_capture_on_commit_callbacks(execute=True):
        by_model = services.cluster_run_create(project=project, user=lead)
    job_cancel(by_model)  # a project has one unfinished run at a time: the second starts once the first has ended
    settings.PRESCORE_MODEL_DIR = ""
    with django_capture_on_commit_callbacks(execute=True):
        services.cluster_run_create(project=project, user=lead)
    queued = sorted(name.rsplit(".", 2)[1] for name in (p.name for p in folder.iterdir()) if name.endswith(".msg"))
    purge_broker()
    assert queued == ["default", "gpu"]


@pytest.mark.worker
def test_a_gpu_worker_alone_clusters_by_the_model_s_embeddings(
    transactional_db, project, annotator, lead, settings, tiny_model, api_client, tmp_path
):
    """A worker that consumes only ``gpu`` picks the run up: the message went there, and the worker (which has
    the model configured in its own environment) loads the checkpoint named on the run."""
    traces = make_traces(project, tmp_path, count=len(wordings()), steps=3)
    made = plant_wordings(project, traces, annotator=annotator, lead=lead, wordings=wordings())
    settings.PRESCORE_MODEL_DIR = str(tiny_model)
    purge_broker()
    worker = WorkerProcess(queues="gpu", env={"STUDIO_PRESCORE_MODEL_DIR": str(tiny_model)}).start()
    try:
        queued = api_client(lead).post(f"/api/projects/{project.pk}/clusters/")
        assert queued.status_code == 202 and queued.json()["representation"] == "model"
        run = wait_for(
            lambda: ClusterRun.objects.filter(pk=queued.json()["id"]).exclude(status__in=["queued", "running"]).first(),
            timeout=180,
            message="the clustering run to finish",
        )
    finally:
        worker.stop()
    assert run.status == "succeeded", (run.message, "".join(worker.log[-40:]))
    assert run.method.startswith("agent-embed embeddings")
    ids = [a.pk for a in made]
    assert text_partition(run) == sorted([sorted(ids[: len(FIELDS)]), sorted(ids[len(FIELDS) :])])
