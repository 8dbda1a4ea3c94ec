"""Sharded exports (exports.services over studio.shards): a bundle's data files are built by shards that any number
of workers take at once, named the Hugging Face way, and assembled into the same bytes whatever the workers.

Worker tests run real `celery worker` processes on whichever broker the run uses (REDIS_URL: Redis; otherwise
kombu's filesystem broker on SQLite). Shards are tiny (two annotations each) and each pauses, so several workers
hold shards at once when one is SIGKILLed or the export is cancelled."""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
import zipfile

import pytest
from django.core.files.storage import default_storage

from annotation.models import Verdict
from exports import services
from exports.models import ExportJob
from exports.storage import bundle_parts_prefix
from studio.models import JobShard
from tests.conftest import WorkerProcess, purge_broker, wait_for
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from traces.models import Trace

TRACES, SHARD = 8, 2  # four shards


def annotate(project, annotator, lead, n=TRACES):
    for i in range(n):
        trace = make_trace(
            project,
            replies=REPLIES,
            external_id=f"s{i}",
            image_seed=i % 4 + 1,
            instruction=f"Open the display settings ({i})",
        )
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=3,
            corrected_thought=f"Fix {i}.",
            corrected_action=f"click(start_box='({i},5)')",
            reflection_thought="Wrong panel; go back.",
            reflection_action="hotkey(key='alt left')",
        )


def _shards(job):
    return JobShard.objects.filter(job_model="exports.ExportJob", job_id=job.pk)


def _stored_parts(job) -> set[str]:
    found: set[str] = set()

    def walk(folder):
        try:
            folders, files = default_storage.listdir(folder)
        except FileNotFoundError:
            return
        found.update(f"{folder}/{name}" for name in files)
        for sub in folders:
            walk(f"{folder}/{sub}")

    walk(bundle_parts_prefix(job))
    return found


def _bundle_bytes(job) -> bytes:
    with default_storage.open(job.bundle_name, "rb") as handle:
        return handle.read()


def _undisturbed(project, user, fmt="trl", **options) -> ExportJob:
    job = services.export_job_create(project=project, user=user, fmt=fmt, options=options, enqueue=False)
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    return job


def _finished(job, timeout=90) -> ExportJob:
    return wait_for(lambda: (j := ExportJob.objects.get(pk=job.pk)).is_finished and j, timeout, 0.1, "export ended")


# --- in one process: the layout, and what loads it --------------------------------------------------------------


@pytest.mark.django_db
def test_a_sharded_bundle_is_named_the_hugging_face_way_and_loads_as_it_is(
    project, annotator, lead, engineer, settings, tmp_path
):
    import datasets

    annotate(project, annotator, lead, 5)
    settings.EXPORT_SHARD_ANNOTATIONS = SHARD  # three shards: 2, 2, 1 annotations
    job = _undisturbed(project, engineer, validation_fraction=0)
    assert _shards(job).count() == 3 and job.counts["shards"] == 3
    with zipfile.ZipFile(default_storage.path(job.bundle_name)) as bundle:
        names = bundle.namelist()
        bundle.extractall(tmp_path / "trl")
    assert [n for n in names if n.startswith("data/")] == [
        f"data/{dataset}/train-0000{k}-of-00003.jsonl" for dataset in ("dpo", "sft") for k in range(3)
    ]
    assert job.counts["by_file"]["data/sft/train-00002-of-00003.jsonl"] == 2  # the last shard: one annotation
    # As it is: the dataset card's configs name the shard files (images and the rest are not taken for data).
    cache = str(tmp_path / "cache")
    dpo = datasets.load_dataset(str(tmp_path / "trl"), "dpo", cache_dir=cache)
    sft = datasets.load_dataset(str(tmp_path / "trl"), "sft", cache_dir=cache)
    assert list(dpo) == ["train"] and len(dpo["train"]) == 5 and len(sft["train"]) == 10
    assert dpo["train"]["annotation_id"] == [s["annotation_id"] for s in json.loads(bundle_manifest(tmp_path))]
    # The same bytes as a second run with the same inputs and shard size.
    again = _undisturbed(project, engineer, validation_fraction=0)
    assert again.bundle_sha256 == job.bundle_sha256


def bundle_manifest(tmp_path) -> str:
    return json.dumps(json.loads((tmp_path / "trl" / "manifest.json").read_text())["sources"])


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["llamafactory", "parquet", "verl"])
def test_every_format_lists_its_shard_files_where_its_trainer_looks(
    project, annotator, lead, engineer, settings, tmp_path, fmt
):
    import datasets
    import yaml

    annotate(project, annotator, lead, 5)
    settings.EXPORT_SHARD_ANNOTATIONS = SHARD
    job = _undisturbed(project, engineer, fmt, validation_fraction=0)
    folder = tmp_path / fmt
    with zipfile.ZipFile(default_storage.path(job.bundle_name)) as bundle:
        bundle.extractall(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    data = sorted(name for name in manifest["files"] if name.startswith("data/"))
    suffix = {"llamafactory": ".json", "parquet": ".parquet", "verl": ".parquet"}[fmt]
    assert data and all(name.endswith(f"-of-00003{suffix}") for name in data)
    cache = str(tmp_path / "cache")
    if fmt == "llamafactory":
        info = json.loads((folder / "dataset_info.json").read_text())
        assert sorted(entry["file_name"] for entry in info.values()) == data
        config = yaml.safe_load((folder / "dpo.yaml").read_text())
        listed = config["dataset"].split(",")
        assert [info[name]["file_name"] for name in listed] == [n for n in data if n.startswith("data/dpo/")]
        records = [r for name in listed for r in json.loads((folder / info[name]["file_name"]).read_text())]
        assert len(records) == 5 and all(r["chosen"]["from"] == "gpt" for r in records)
    elif fmt == "parquet":
        dpo = datasets.load_dataset(str(folder), "dpo", cache_dir=cache)
        # The shards' screenshots are in the one images.parquet, once each; rows name theirs by sha256.
        screenshots = datasets.load_dataset("parquet", data_files=str(folder / "images.parquet"), cache_dir=cache)
        image_of = dict(zip(screenshots["train"]["sha256"], screenshots["train"]["image"]))
        assert len(image_of) == manifest["counts"]["images"]
        assert len(dpo["train"]) == 5 and image_of[dpo["train"][0]["images"][0]].size == (56, 42)
    else:
        rl = datasets.load_dataset(str(folder), "rl", cache_dir=cache)
        assert len(rl["train"]) == 10  # a corrected and a post-reflection row per annotation
        readme = (folder / "README.md").read_text()
        block = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
        assert yaml.safe_load(block)["data"]["train_files"] == data


@pytest.mark.django_db
def test_a_failed_shard_is_retried_without_duplicating_a_sample(
    project, annotator, lead, engineer, settings, monkeypatch
):
    from exports import builders

    annotate(project, annotator, lead, 6)
    settings.EXPORT_SHARD_ANNOTATIONS = SHARD
    reference = _undisturbed(project, engineer)
    real = builders.annotation_samples
    broken = {"left": 1}
    third = Trace.objects.get(project=project, external_id="s3").pk

    def fails_once_mid_shard(annotation, *args, **kwargs):
        # The second annotation of a shard: the shard wrote half its samples when it breaks.
        # Only in a shard's work: the export's plan also builds a few traces' samples to draw the validation
        # split among traces that give samples (builders.traces_with_samples), and that is not the shard.
        planning = any(frame.function == "traces_with_samples" for frame in inspect.stack())
        if broken["left"] and annotation.trace_id == third and not planning:
            broken["left"] -= 1
            raise OSError("storage hiccup")
        yield from real(annotation, *args, **kwargs)

    monkeypatch.setitem(builders.SAMPLE_SETS, "sft_dpo", fails_once_mid_shard)
    job = _undisturbed(project, engineer)
    assert _shards(job).get(index=1).attempts == 2 and not broken["left"]
    assert job.bundle_sha256 == reference.bundle_sha256
    assert job.counts["by_kind"]["dpo"] == 6 and len(job.sources) == 6


@pytest.mark.django_db
def test_a_shard_reads_its_annotations_by_primary_key_and_keeps_only_those_still_accepted(
    project, annotator, lead, tmp_path
):
    """A shard asks for its annotations by id alone: with the project in the query too, a planner that took the
    project for a small one (a new project its statistics did not know) read all the project's annotations for each
    batch of ids (479 ms a batch at a million annotations, 4.4 ms by primary key). What the plan chose is checked
    again: an annotation sent back since is left out."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Annotation, AnnotationStatus
    from exports.builders import BuildStats, ExportOptions, export_plan_annotations

    annotate(project, annotator, lead, 4)
    ids = export_plan_annotations(project, None, BuildStats())
    assert len(ids) == 4
    Annotation.objects.filter(pk=ids[1]).update(status=AnnotationStatus.SUBMITTED)  # sent back after the plan
    with CaptureQueriesContext(connection) as queries:
        result = services.export_part_build(
            project=project, fmt="trl", options=ExportOptions.parse(None), annotation_ids=ids[:3], workdir=tmp_path
        )
    assert [pk for pk, _ in result.sources] == [ids[0], ids[2]]
    table = Annotation._meta.db_table
    reads = [q["sql"].split("WHERE", 1)[-1] for q in queries if f'FROM "{table}"' in q["sql"]]
    by_ids = [where for where in reads if f'"{table}"."id" IN' in where]
    assert by_ids, reads
    assert not [where for where in by_ids if f'"{table}"."project_id"' in where], by_ids[0]


@pytest.mark.django_db
def test_a_shard_is_built_with_the_objects_made_before_it_out_of_the_collectors_full_passes(
    project, annotator, lead, tmp_path
):
    """While a shard is built, what the process held before it is frozen (a full collection walks only what the
    shard made), and given back after; where something was frozen already (a process that froze its start), the
    build leaves the freeze alone, since ``gc.unfreeze`` would give that back too."""
    import gc

    from exports.builders import BuildStats, ExportOptions, export_plan_annotations

    annotate(project, annotator, lead, 2)
    ids = export_plan_annotations(project, None, BuildStats())
    frozen_during: list[int] = []

    def build(workdir):
        return services.export_part_build(
            project=project,
            fmt="trl",
            options=ExportOptions.parse(None),
            annotation_ids=ids,
            workdir=workdir,
            on_batch=lambda done: frozen_during.append(gc.get_freeze_count()),
        )

    gc.unfreeze()
    build(tmp_path / "a")
    assert frozen_during and frozen_during[0] > 0
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        build(tmp_path / "b")
        # Neither frozen again (the count would grow by what was made since) nor given back (0); frozen objects the
        # build let go of leave the count.
        assert 0 < frozen_during[-1] <= before and 0 < gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()


# --- real workers -----------------------------------------------------------------------------------------------


@pytest.fixture
def shard_env(monkeypatch, settings):
    monkeypatch.setenv("STUDIO_EXPORT_SHARD_ANNOTATIONS", str(SHARD))
    monkeypatch.setenv("STUDIO_EXPORT_THROTTLE_S", "0.8")  # a pause per shard (one batch), so shards overlap
    # A killed worker's shard is taken back within seconds (its watchdog looks every stale/3 s).
    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "2")
    monkeypatch.setenv("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", "3600")  # recovery must not wait for the broker
    settings.EXPORT_SHARD_ANNOTATIONS = SHARD  # the undisturbed run in this process plans the same shards


def _workers(n: int) -> list[WorkerProcess]:
    purge_broker()
    return [WorkerProcess().start() for _ in range(n)]


def _stop(workers) -> None:
    for worker in workers:
        worker.stop()


def _took_shards(worker: WorkerProcess) -> int:
    return sum(1 for line in worker.log if "jobs.export.shard[" in line and "succeeded" in line)


@pytest.mark.worker
def test_bundle_bytes_are_the_same_with_one_and_with_three_workers(
    transactional_db, project, annotator, lead, engineer, shard_env, monkeypatch
):
    # Nobody is killed here: a long staleness limit, so a worker slowed by a loaded machine is not taken for dead
    # and its shard run a second time (correct, but then the shard counts below would not be exact).
    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "60")
    annotate(project, annotator, lead)
    reference = _undisturbed(project, engineer)
    runs = {}
    for count in (1, 3):
        workers = _workers(count)
        try:
            job = _finished(services.export_job_create(project=project, user=engineer, fmt="trl"))
        finally:
            _stop(workers)
        assert job.status == "succeeded", (job.message, "".join(workers[0].log)[-3000:])
        assert _shards(job).count() == TRACES // SHARD and job.counts["shards"] == TRACES // SHARD
        runs[count] = (job, [_took_shards(w) for w in workers])
    (one, by_one), (three, by_three) = runs[1], runs[3]
    assert by_one == [TRACES // SHARD] and sum(by_three) == TRACES // SHARD
    assert sum(1 for n in by_three if n) >= 2, by_three  # the shards really were built on several workers
    assert one.bundle_sha256 == three.bundle_sha256 == reference.bundle_sha256
    assert _bundle_bytes(one) == _bundle_bytes(three)
    assert one.progress_done == one.progress_total and three.attempts == 2  # the plan, then the assembly
    assert not _stored_parts(one) and not _stored_parts(three)


@pytest.mark.worker
def test_a_worker_killed_mid_shard_leaves_the_bundle_of_an_undisturbed_run(
    transactional_db, project, annotator, lead, engineer, shard_env
):
    annotate(project, annotator, lead)
    reference = _undisturbed(project, engineer)
    victim, survivor = _workers(2)
    try:
        job = services.export_job_create(project=project, user=engineer, fmt="trl")
        wait_for(lambda: _shards(job).filter(status="running").count() >= 2, 60, 0.05, "two shards running")
        victim.kill()
        assert _shards(job).filter(status="running").exists()
        job = _finished(job)
    finally:
        victim.kill()
        survivor.stop()
    log = "".join(survivor.log)
    assert job.status == "succeeded", (job.message, log[-3000:])
    assert max(_shards(job).values_list("attempts", flat=True)) >= 2, "the killed worker's shard was run again"
    # Taken back without the broker (it would wait an hour): whichever comes first of the shard watchdog, the job's
    # next run sending its stale running shards again (studio.shards.shards_dispatch) or a second message's claim.
    assert "JobTransitionError" not in log, log[-3000:]
    assert job.attempts == 2 and job.finished_at  # planned once, assembled once: it ended once
    assert job.bundle_sha256 == reference.bundle_sha256
    assert job.counts["by_kind"] == reference.counts["by_kind"] and len(job.sources) == TRACES
    assert not _stored_parts(job)  # the killed run's stored files went with the rest


@pytest.mark.worker
def test_cancel_while_shards_run_stops_every_shard_write(
    transactional_db, project, annotator, lead, engineer, shard_env
):
    from studio.jobs import job_cancel

    annotate(project, annotator, lead)
    workers = _workers(2)
    try:
        job = services.export_job_create(project=project, user=engineer, fmt="trl")
        wait_for(lambda: _shards(job).filter(status="running").count() >= 2, 60, 0.05, "two shards running")
        job_cancel(job)  # committed: the cancel is acknowledged
        recorded = set(_shards(job).exclude(result=None).values_list("index", flat=True))
        stored = _stored_parts(job)
        job = _finished(job, 60)
        wait_for(lambda: not _shards(job).filter(status="running").exists(), 30, 0.1, "every shard stopped")
        time.sleep(2)  # longer than a shard takes: a shard that ignored the cancel would have stored its files
        assert set(_shards(job).exclude(result=None).values_list("index", flat=True)) == recorded
        assert len(recorded) < TRACES // SHARD
        assert not _stored_parts(job) - stored  # nothing stored after the cancel (and what was is given back)
    finally:
        _stop(workers)
    assert job.status == "cancelled", job.message
    assert not job.bundle_name and not _stored_parts(job)
    assert set(_shards(job).values_list("status", flat=True)) <= {"done", "cancelled"}
    assert _shards(job).filter(status="cancelled").exists()


def test_files_deflated_beforehand_give_the_archive_zipfile_writes_compressing_them(tmp_path):
    """A shard deflates its data files (bundle.file_deflate) and the assembly copies the streams: the archive's
    bytes are those of zipfile compressing the same files itself, for an empty file, a small one, one of several
    read chunks, and beside a stored image."""
    import hashlib
    import random

    from exports import bundle

    rng = random.Random(7)
    texts = {
        "data/a/train-00000-of-00001.jsonl": b"",
        "data/b/train-00000-of-00001.jsonl": '{"t": "Écran ✓"}\n'.encode(),
        "data/c/train-00000-of-00001.jsonl": b"".join(
            f'{{"i": {i}, "w": "{rng.choice(["click", "type", "scroll"])}{rng.random()}"}}\n'.encode()
            for i in range(120_000)
        ),
    }
    assert len(texts["data/c/train-00000-of-00001.jsonl"]) > 2 * bundle.CHUNK
    image = tmp_path / "shot.png"
    image.write_bytes(rng.randbytes(5000))
    plain, deflated = [], []
    for name, data in texts.items():
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(data)
        sha256, header = bundle.file_deflate(path, tmp_path / f"{path.name}.deflate")
        assert sha256 == hashlib.sha256(data).hexdigest()
        stream = tmp_path / f"{path.name}.deflate"
        plain.append(bundle.Entry(name, len(data), lambda p=path: open(p, "rb"), compress=True))
        deflated.append(bundle.Entry(name, len(data), lambda s=stream: open(s, "rb"), compress=True, deflated=header))
    shot = bundle.Entry("images/shot.png", 5000, lambda: open(image, "rb"), compress=False)
    bundle.write_archive(tmp_path / "plain.zip", [*plain, shot])
    bundle.write_archive(tmp_path / "deflated.zip", [*deflated, shot])
    assert (tmp_path / "plain.zip").read_bytes() == (tmp_path / "deflated.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "deflated.zip") as archive:
        assert archive.testzip() is None
        assert {name: archive.read(name) for name in texts} == texts
    # A stream that is not the one its header describes is refused, not written into a bundle.
    wrong = dataclasses.replace(deflated[2], deflated=bundle.Deflated(0, deflated[2].deflated.compressed_size + 1))
    with pytest.raises(ValueError, match="deflated bytes"):
        bundle.write_archive(tmp_path / "wrong.zip", [wrong])


def test_the_manifest_is_written_streamed_with_the_bytes_of_one_json_dump(tmp_path):
    """manifest.json is written chunk by chunk and its sources are made row by row (bundle.Rows), so a million
    sources are never one string or a million dicts at once; the bytes are those of one indented json.dumps."""
    from exports import bundle

    sources = [(7, 3), (2, 1), (40000, 12)]
    manifest = {
        "sources": bundle.Rows(sources, lambda s: {"annotation_id": s[0], "version": s[1]}),
        "skipped": bundle.Rows([], str),
        "project": {"name": "Écran ✓", "id": 1},
        "counts": {"by_kind": {"dpo": 3}},
    }
    bundle.manifest_write(tmp_path / "manifest.json", manifest)
    plain = {
        **manifest,
        "sources": [{"annotation_id": pk, "version": version} for pk, version in sources],
        "skipped": [],
    }
    expected = (json.dumps(plain, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
    assert (tmp_path / "manifest.json").read_bytes() == expected
