"""Writes of the insights app: the search index, slices, cluster runs."""

from __future__ import annotations

import logging
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext, gettext_noop

from annotation.models import Annotation, AnnotationKind, AnnotationStatus, Verdict
from insights import search_text, signature
from insights.models import Cluster, ClusterRun, SearchEntry, Slice
from prescoring.models import StepSuggestion
from studio.engine import job_enqueue, job_run_here
from studio.errors import Conflict, Invalid
from studio.jobs import JobSuperseded, job_progress
from studio.models import JobStatus
from traces.models import Project, Step

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

# --- the search index ------------------------------------------------------------------------


def search_entry_refresh(*, annotation_id: int) -> SearchEntry | None:
    """Make the annotation's search entry what the annotation says now; an annotation without a first error has
    none (search finds corrections: a step card needs a τ), nor has a draft (search finds corrections handed in;
    insights.receivers skips a draft's autosaves for that reason), nor a gold or qualification answer (scored against
    a reference, never the project's corrections: annotation.quality)."""
    annotation = Annotation.objects.select_related("trace", "trace__project").filter(pk=annotation_id).first()
    if (
        annotation is None
        or annotation.kind != AnnotationKind.PRODUCTION
        or annotation.status == AnnotationStatus.DRAFT
        or annotation.verdict != Verdict.ERROR
        or not annotation.tau
    ):
        SearchEntry.objects.filter(annotation_id=annotation_id).delete()
        if annotation is not None:
            search_agreement_refresh(trace_id=annotation.trace_id)
        return None
    trace = annotation.trace
    step = Step.objects.select_related("screenshot").filter(trace_id=trace.pk, index=annotation.tau).first()
    recorded = signature.first_action(step.action_text) if step else None
    corrected = signature.first_action(annotation.corrected_action)
    shot = step.screenshot if step else None
    bucket, direction = signature.displacement(
        signature.action_point(recorded),
        signature.action_point(corrected),
        recorded_convention=trace.coordinate_convention,
        corrected_convention=trace.project.coordinate_convention,
        width=shot.width if shot else 0,
        height=shot.height if shot else 0,
        max_pixels=trace.project.max_pixels,
    )
    metadata = trace.metadata if isinstance(trace.metadata, dict) else {}
    values = {
        "project_id": annotation.project_id,
        "trace_id": trace.pk,
        "step_id": step.pk if step else None,
        "round_id": trace.round_id,
        "annotator_id": annotation.annotator_id,
        **search_text.entry_texts(annotation, step, instruction=trace.instruction),
        "status": annotation.status,
        "verdict": annotation.verdict,
        "category": annotation.error_category,
        "recorded_type": signature.action_type(step.action_text) if step else "",
        "corrected_type": signature.action_type(annotation.corrected_action),
        "displacement": bucket,
        "direction": direction,
        "position": signature.position(annotation.tau, trace.step_count),
        "tau": annotation.tau,
        "step_count": trace.step_count,
        "platform": str(metadata.get("platform") or trace.project.platform)[:40],
        "app": signature.app_of(metadata),
        "annotation_version": annotation.version,
        "suspicion": _latest_suspicion(step),
    }
    entry, _ = SearchEntry.objects.update_or_create(annotation_id=annotation.pk, defaults=values)
    search_agreement_refresh(trace_id=trace.pk)
    entry.refresh_from_db(fields=["agreement"])
    return entry


def _latest_suspicion(step: Step | None) -> float | None:
    """The step's pre-score suspicion from its latest scoring (the triggers of migration 0009 keep it so after)."""
    if step is None:
        return None
    latest = StepSuggestion.objects.filter(step=step).order_by("-created_at", "-id")
    return latest.values_list("suspicion", flat=True).first()


AGREES, DIFFERS = "same τ", "other τ"


def search_agreement_refresh(*, trace_id: int) -> None:
    """Each entry of a trace against the trace's other handed-in answers: ``same τ`` when every other answer names
    the same first erroneous step, ``other τ`` when one names another step or no error, empty when it is the only
    answer. Refreshed with any of the trace's entries, so a second answer updates the first's."""
    first_error = {
        pk: (tau if verdict == Verdict.ERROR else None)
        for pk, verdict, tau in Annotation.objects.filter(trace_id=trace_id, kind=AnnotationKind.PRODUCTION)
        .exclude(status=AnnotationStatus.DRAFT)
        .values_list("pk", "verdict", "tau")
    }
    for entry_id, annotation_id in SearchEntry.objects.filter(trace_id=trace_id).values_list("pk", "annotation_id"):
        others = [tau for pk, tau in first_error.items() if pk != annotation_id]
        mine = first_error.get(annotation_id)
        value = "" if not others else AGREES if all(t == mine for t in others) else DIFFERS
        SearchEntry.objects.filter(pk=entry_id).exclude(agreement=value).update(agreement=value)


def search_index_rebuild(*, project: Project) -> int:
    """Every search entry of the project made again (after an import of annotations, or a change of these rules)."""
    SearchEntry.objects.filter(project=project).delete()
    made = 0
    ids = (
        Annotation.objects.filter(project=project, verdict=Verdict.ERROR)
        .exclude(status=AnnotationStatus.DRAFT)
        .values_list("pk", flat=True)
    )
    for pk in ids.iterator(chunk_size=2000):
        made += search_entry_refresh(annotation_id=pk) is not None
    return made


# --- slices -------------------------------------------------------------------------------------


def slice_create(*, project: Project, user: User, name: str, query: dict) -> Slice:
    from insights.selectors import search_query_parse

    name = (name or "").strip()
    if not name:
        raise Invalid(gettext("a slice needs a name"), field="name")
    if len(name) > 120:
        raise Invalid(gettext("a slice's name has at most 120 characters"), field="name")
    parsed = search_query_parse(query)
    try:
        with transaction.atomic():
            return Slice.objects.create(project=project, name=name, query=parsed.to_json(), created_by=user)
    except IntegrityError:
        raise Conflict(gettext("this project already has a slice named %(name)s") % {"name": repr(name)}) from None


def slice_delete(*, slice_: Slice) -> None:
    slice_.delete()


# --- clusters -----------------------------------------------------------------------------------

# Scripts written without spaces between words (Han, kana, Thai, Lao, Myanmar, Khmer): a run of them is read as its
# overlapping pairs of characters, which stand in for its words (a word of these scripts is mostly one or two
# characters, and a pair shared by two texts is rarely chance). Any other script's words are runs of letters
# (combining marks included, which Indic scripts need), two or more long.
_UNSPACED = search_text.UNSPACED
_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0900-\u0dff"
TOKEN = re.compile(rf"(?P<unspaced>[{_UNSPACED}]+)|(?P<word>[^\W\d_{_UNSPACED}]+(?:[{_MARKS}]+[^\W\d_{_UNSPACED}]*)*)")
# An ASCII text (most corrections) has only the simplest words: read with one findall, four times as fast.
ASCII_WORD = re.compile(r"[a-z][a-z]+")
STOP_WORDS = frozenset(
    "a an and are as at be been before but by for from has have i in into is it its of on or should that the then "
    "this to was were will with instead not first".split()
)
TEXT_SIMILARITY = 0.3  # cosine similarity above which two corrections' texts join one cluster
MIN_TEXT_CLUSTER = 2


def cluster_run_create(*, project: Project, user: User, enqueue: bool = True) -> ClusterRun:
    """Queue a clustering, or answer the project's run already queued or running (a project has one at a time: a
    second click, or twenty at once, start nothing more; the database's constraint decides a race). With a
    pre-scoring model configured (STUDIO_PRESCORE_MODEL_DIR) the texts are compared by that model's embeddings, on
    the ``gpu`` queue where the model stays loaded; without one, by TF-IDF on the ``default`` queue. The run records
    which, so a worker that picks it up later does what the run says."""
    from prescoring.services import configured_model_dir

    model_dir = configured_model_dir()
    for _ in range(3):
        unfinished = _unfinished_cluster_run(project)
        if unfinished is not None:
            return unfinished
        try:
            with transaction.atomic():
                run = ClusterRun.objects.create(
                    project=project,
                    created_by=user,
                    representation=ClusterRun.Representation.MODEL if model_dir else ClusterRun.Representation.TFIDF,
                    model_path=model_dir,
                )
                if enqueue:
                    job_enqueue(run)
            return run
        except IntegrityError:
            continue  # another request queued one meanwhile: answer it (unless it has already ended: try again)
    raise Conflict(gettext("the project's clustering keeps changing state; try again in a moment"))


def _unfinished_cluster_run(project: Project) -> ClusterRun | None:
    return ClusterRun.objects.filter(project=project, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).first()


def cluster_run_queue(run: ClusterRun) -> str:
    """Where the run's task goes (its kind's queue): the CPU worker never loads torch, so a run by the model's
    embeddings goes to the ``gpu`` workers."""
    return "gpu" if run.representation == ClusterRun.Representation.MODEL else "default"


def text_tokens(text: str) -> list[str]:
    """The words a correction's text is compared by, in any script: lower-case words of two letters or more
    (English stop words left out), and the character pairs of a run of a script written without spaces (a lone
    character of one stands for itself). Digits, punctuation and symbols are no words: a text of only those has
    none, and is left out of text clustering (``cluster_run_work`` counts it)."""
    text = text.lower()
    if text.isascii():
        return [word for word in ASCII_WORD.findall(text) if word not in STOP_WORDS]
    out: list[str] = []
    for match in TOKEN.finditer(text):
        run = match.group("unspaced")
        if run:
            out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        elif len(word := match.group("word")) >= 2 and word not in STOP_WORDS:
            out.append(word)
    return out


def _tfidf(texts: list[str]) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Unit-length TF-IDF vectors (sparse, term -> weight) and each term's idf."""
    docs = [Counter(text_tokens(t)) for t in texts]
    df = Counter(term for doc in docs for term in doc)
    n = len(docs)
    idf = {term: math.log((1 + n) / (1 + count)) + 1 for term, count in df.items()}
    vectors = []
    for doc in docs:
        vec = {term: count * idf[term] for term, count in doc.items()}
        norm = math.sqrt(sum(w * w for w in vec.values())) or 1.0
        vectors.append({term: w / norm for term, w in vec.items()})
    return vectors, idf


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(w * b.get(term, 0.0) for term, w in a.items())


# Up to this many distinct texts, average linkage runs on every pair of them; past it (it is quadratic in time and
# memory), the texts are first gathered into KMEANS_GROUPS k-means groups of their TF-IDF vectors, and the linkage
# runs on the groups' centres (bench/cluster.py: 100,000 distinct corrections, figures in docs/architecture.md).
DIRECT_LINKAGE_LIMIT = 2_000
KMEANS_GROUPS = 500


def _normalised(text: str) -> str:
    return " ".join(text_tokens(text))


# Cosine similarity above which two corrections' texts join one cluster when they are compared by the model's
# embeddings, centred first (the mean of the distinct texts' embeddings taken off, rows made unit length again): a
# decoder's mean-pooled states share one large direction whatever the text, so raw cosines of unrelated texts sit
# well above any useful cut (0.5 to 0.7 on the tests' tiny checkpoint); centred, they fall below 0 and rewordings
# of one mistake stay above. The cut is TF-IDF's; no real checkpoint has been measured with it yet.
EMBEDDING_SIMILARITY = 0.3


def text_clusters(
    texts: list[str], *, embed: Callable[[list[str]], Any] | None = None, embedding_name: str = "model"
) -> tuple[list[int], str]:
    """A cluster label per text (-1: alone) and the method's name. Average-linkage agglomerative clustering on the
    TF-IDF cosine distance of their words in any script (:func:`text_tokens`; scikit-learn's linkage where it is
    installed, else the same linkage in plain Python), over the distinct texts (corrections worded alike count once
    each in the linkage and all get its label). A text with no word stays alone (-1): it has nothing to be
    compared by. With ``embed`` (distinct texts -> unit vectors, one row each: the model's embeddings) the linkage
    runs on the centred embeddings at EMBEDDING_SIMILARITY instead (:func:`embedded_text_clusters`)."""
    if embed is not None:
        return embedded_text_clusters(texts, embed, name=embedding_name)
    labels = [-1] * len(texts)
    distinct: dict[str, int] = {}
    position: dict[int, int] = {}
    for i, text in enumerate(texts):
        if key := _normalised(text):
            position[i] = distinct.setdefault(key, len(distinct))
    unique = list(distinct)
    if len(position) < 2:
        return labels, "none"
    if len(unique) < 2:
        return [0 if i in position else -1 for i in range(len(texts))], "identical texts"
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
    except ImportError:
        if len(unique) > DIRECT_LINKAGE_LIMIT:
            raise RuntimeError(
                f"{len(unique)} distinct correction texts: clustering more than {DIRECT_LINKAGE_LIMIT} needs "
                "scikit-learn on the worker (the studio's main dependencies install it)"
            ) from None
        unique_labels = _agglomerate(unique)
        how = "average linkage (python)"
    else:
        # The distinct texts are their words joined by spaces already (_normalised): split on the spaces, no more.
        matrix = TfidfVectorizer(analyzer=str.split).fit_transform(unique)
        unique_labels, how = _linkage_labels(matrix, similarity=TEXT_SIMILARITY)
    for i, p in position.items():
        labels[i] = unique_labels[p]
    return labels, f"tf-idf {how}"


def _linkage_labels(matrix: Any, *, similarity: float) -> tuple[list[int], str]:
    """Average-linkage labels of the rows of ``matrix`` (sparse or dense) at cosine ``similarity``: on every pair of
    rows up to DIRECT_LINKAGE_LIMIT rows, past it on the centres of KMEANS_GROUPS k-means groups of the rows."""
    import numpy as np

    # A row of zeros (a text whose words all weigh nothing, an embedding equal to the mean) has no direction: cosine
    # distance is undefined for it (scikit-learn refuses the whole matrix), so it stays alone (-1).
    if hasattr(matrix, "multiply"):  # sparse (TF-IDF)
        norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1))).ravel()
    else:
        norms = np.linalg.norm(matrix, axis=1)
    rows = [i for i, norm in enumerate(norms) if norm > 0]
    if len(rows) < matrix.shape[0]:
        inner, how = _linkage_labels(matrix[rows], similarity=similarity) if len(rows) >= 2 else ([0] * len(rows), "")
        labels = [-1] * matrix.shape[0]
        for row, label in zip(rows, inner, strict=True):
            labels[row] = label
        return labels, how or "none"
    from sklearn.cluster import AgglomerativeClustering, MiniBatchKMeans

    linkage = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=1 - similarity
    )
    if matrix.shape[0] <= DIRECT_LINKAGE_LIMIT:
        dense = matrix.toarray() if hasattr(matrix, "toarray") else matrix
        return [int(v) for v in linkage.fit_predict(dense)], "average linkage (scikit-learn)"
    groups = MiniBatchKMeans(n_clusters=KMEANS_GROUPS, batch_size=4096, n_init=1, random_state=0, max_iter=20).fit(
        matrix
    )
    centres = groups.cluster_centers_
    used = sorted(set(int(g) for g in groups.labels_))
    centre_labels = [int(v) for v in linkage.fit_predict(centres[used])]
    label_of_group = dict(zip(used, centre_labels, strict=True))
    labels = [label_of_group[int(g)] for g in groups.labels_]
    return labels, f"k-means ({KMEANS_GROUPS} groups) then average linkage (scikit-learn)"


def embedded_text_clusters(
    texts: list[str], embed: Callable[[list[str]], Any], *, name: str = "model"
) -> tuple[list[int], str]:
    """:func:`text_clusters` by embeddings: the distinct texts (whitespace aside; a text with no words stays alone)
    embedded once each by ``embed``, centred (EMBEDDING_SIMILARITY says why), then the same average linkage."""
    import numpy as np

    labels = [-1] * len(texts)
    distinct: dict[str, int] = {}
    position: dict[int, int] = {}
    for i, text in enumerate(texts):
        key = " ".join(text.split())
        if text_tokens(key):
            position[i] = distinct.setdefault(key, len(distinct))
    unique = list(distinct)
    if len(unique) < 2:
        for i in position:
            labels[i] = 0
        return labels, "none" if len(position) < 2 else "identical texts"
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "clustering by the model's embeddings needs scikit-learn on the worker (the studio's main dependencies "
            "install it)"
        ) from None
    vectors = np.asarray(embed(unique), dtype=np.float32)
    if vectors.shape[0] != len(unique):
        raise RuntimeError(f"{vectors.shape[0]} embeddings for {len(unique)} texts")
    centred = vectors - vectors.mean(axis=0)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    centred = centred / np.where(norms > 0, norms, 1.0)
    unique_labels, how = _linkage_labels(centred, similarity=EMBEDDING_SIMILARITY)
    for i, p in position.items():
        labels[i] = unique_labels[p]
    return labels, f"{name} embeddings, {how}"[:120]


def _agglomerate(texts: list[str]) -> list[int]:
    vectors, _ = _tfidf(texts)
    clusters: list[list[int]] = [[i] for i in range(len(texts))]
    sims = {(i, j): _cosine(vectors[i], vectors[j]) for i in range(len(texts)) for j in range(i + 1, len(texts))}

    def linkage(a: list[int], b: list[int]) -> float:
        return sum(sims[(min(i, j), max(i, j))] for i in a for j in b) / (len(a) * len(b))

    while len(clusters) > 1:
        best, pair = -1.0, (0, 0)
        for x in range(len(clusters)):
            for y in range(x + 1, len(clusters)):
                score = linkage(clusters[x], clusters[y])
                if score > best:
                    best, pair = score, (x, y)
        if best < TEXT_SIMILARITY:
            break
        x, y = pair
        clusters[x] += clusters.pop(y)
    labels = [-1] * len(texts)
    for number, members in enumerate(clusters):
        for i in members:
            labels[i] = number
    return labels


def distinctive_terms_by_cluster(
    texts: list[str], groups: dict[int, list[int]], *, top: int = 4
) -> dict[int, list[str]]:
    """Per cluster, the terms that weigh most in its members' texts against the whole set (summed TF-IDF); the
    weights are computed once for all clusters."""
    vectors, _ = _tfidf(texts)
    out = {}
    for label, members in groups.items():
        weight: Counter[str] = Counter()
        for i in members:
            weight.update(vectors[i])
        out[label] = [term for term, _ in weight.most_common(top)]
    return out


def distinctive_terms(texts: list[str], members: list[int], *, top: int = 4) -> list[str]:
    """The terms that weigh most in the members' texts against the whole set (summed TF-IDF)."""
    return distinctive_terms_by_cluster(texts, {0: members}, top=top)[0]


# What a run reports as its progress: the corrections read, the signature clusters, the text clusters, written.
CLUSTER_RUN_STAGES = 4
TEXT_CLUSTERING_FAILED = gettext_noop(
    "the texts could not be clustered (the worker log has the error), so only the signature clusters were made"
)


def cluster_run_work(run: ClusterRun) -> str:
    """The clustering job's work (its kind's ``run``, in ``studio.jobs.job_run``): group the project's accepted
    corrections by signature and by text, and replace the run's clusters with them; returns the summary. Idempotent
    (a run taken over starts again); a cancel stops it at its next stage. A text with no word to compare is left out
    of the text clusters and counted; should the text clustering fail all the same, the signature clusters are kept
    and the summary says so in the studio's words (the log keeps the error)."""
    from insights.selectors import correction_rows

    job_progress(run, done=0, total=CLUSTER_RUN_STAGES)
    rows = correction_rows(run.project)
    job_progress(run, done=1)
    clusters: list[Cluster] = []
    by_signature: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        key = (
            f"{row['recorded_type'] or '?'} → {row['corrected_type'] or '?'}",
            row["displacement"],
            row["category"],
        )
        by_signature[key].append(row)
    for key, members in by_signature.items():
        if len(members) < MIN_TEXT_CLUSTER:
            continue
        clusters.append(_cluster(run, Cluster.Kind.SIGNATURE, " · ".join(k for k in key if k), list(key), members))
    signatures = len(clusters)
    job_progress(run, done=2)
    texts = [row["text"] for row in rows]
    without_words = sum(1 for text in texts if not text_tokens(text))
    problem = ""
    try:
        if run.representation == ClusterRun.Representation.MODEL:
            labels, method = text_clusters(texts, embed=_model_embedder(run.model_path), embedding_name=run.model_name)
        else:
            labels, method = text_clusters(texts)
    except Exception:  # noqa: BLE001 - the signature clusters stand without the text ones; the log keeps the error
        log.exception("clustering run %s: the texts could not be clustered", run.pk)
        labels, method, problem = [-1] * len(texts), "", gettext(TEXT_CLUSTERING_FAILED)
    groups: dict[int, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        if label >= 0:
            groups[label].append(i)
    groups = {label: indices for label, indices in groups.items() if len(indices) >= MIN_TEXT_CLUSTER}
    terms_of = distinctive_terms_by_cluster(texts, groups)
    for label, indices in groups.items():
        terms = terms_of[label]
        clusters.append(_cluster(run, Cluster.Kind.TEXT, ", ".join(terms), terms, [rows[i] for i in indices]))
    clusters = carry_over_lead_choices(run, clusters)
    job_progress(run, done=3)
    with transaction.atomic():
        # Written by the run that still holds the job only (a run taken over meanwhile writes nothing).
        current = ClusterRun.objects.select_for_update().filter(pk=run.pk).values("attempts", "status").first()
        if current is None or current["attempts"] != run.attempts or current["status"] != JobStatus.RUNNING:
            raise JobSuperseded()
        run.clusters.all().delete()
        Cluster.objects.bulk_create(clusters)
        ClusterRun.objects.filter(pk=run.pk).update(
            method=method[:120], corrections=len(rows), without_words=without_words, progress_done=CLUSTER_RUN_STAGES
        )
    parts = [
        gettext("%(signatures)s signature and %(texts)s text clusters of %(corrections)s corrections")
        % {"signatures": signatures, "texts": len(groups), "corrections": len(rows)}
    ]
    if without_words:
        parts.append(
            gettext("%(count)s with no word to compare, left out of the text clusters") % {"count": without_words}
        )
    if problem:
        parts.append(problem)
    return gettext("; ").join(parts)


def cluster_run_compute(*, run_id: int) -> ClusterRun:
    """Run the clustering ``run_id`` in this process (commands, tests, the benchmark) as a worker runs it; returns
    the run as it ended."""
    return job_run_here(ClusterRun.objects.get(pk=run_id))


def _model_embedder(model_path: str) -> Callable[[list[str]], Any]:
    """The texts' embeddings by the pre-scoring model (prescoring.qwen2vl, loaded on first use and kept by the gpu
    worker, shared with the scoring jobs): torch is imported here, on the worker that runs the job, never at import."""

    def embed(texts: list[str]) -> Any:
        from prescoring.qwen2vl import load_scorer

        scorer = load_scorer(model_path, static_decode=django_settings.PRESCORE_STATIC_DECODE)
        with scorer.lock:
            return scorer.text_embeddings(texts)

    return embed


def _cluster(run: ClusterRun, kind: str, name: str, terms: list, members: list[dict]) -> Cluster:
    by_round = Counter(row["round"] or "no round" for row in members)
    return Cluster(
        run=run,
        kind=kind,
        name=name[:200],
        terms=terms,
        size=len(members),
        sizes_by_round=dict(sorted(by_round.items())),
        annotation_ids=sorted(row["annotation_id"] for row in members),
    )


def slice_send_to_queue(*, slice_: Slice, user: User, withdraw: bool = False) -> dict:
    """Send the traces of a slice's corrections back to the annotation queue for one more answer each, first in
    line (or take that request back): a second reading of exactly the mistakes under study."""
    from annotation.services import queue_request_create, queue_request_withdraw
    from insights.selectors import slice_entries

    trace_ids = set(slice_entries(slice_, user).order_by().values_list("trace_id", flat=True))
    if withdraw:
        return queue_request_withdraw(project=slice_.project, trace_ids=trace_ids)
    return queue_request_create(project=slice_.project, trace_ids=trace_ids, user=user, reason=f"slice: {slice_.name}")


# A new cluster inherits a lead's name, pin and merge from the previous clustering's cluster that holds at least this
# share of its corrections: a rerun after new answers must not undo what the lead did.
CARRY_OVER_SHARE = 0.5


def _covering(cluster: Cluster, previous: list[Cluster]) -> Cluster | None:
    members = set(cluster.annotation_ids)
    best, best_share = None, 0.0
    for old in previous:
        if old.kind != cluster.kind or not (old.label or old.pinned or old.merged):
            continue
        share = len(members & set(old.annotation_ids)) / len(members) if members else 0.0
        if share > best_share:
            best, best_share = old, share
    return best if best_share >= CARRY_OVER_SHARE else None


def carry_over_lead_choices(run: ClusterRun, clusters: list[Cluster]) -> list[Cluster]:
    """The clusters of ``run`` with the previous run's labels, pins and merges applied to the clusters they cover."""
    before = (
        ClusterRun.objects.filter(project_id=run.project_id, status=JobStatus.SUCCEEDED)
        .exclude(pk=run.pk)
        .order_by("-created_at", "-id")
        .first()
    )
    if before is None:
        return clusters
    previous = list(before.clusters.all())
    out: list[Cluster] = []
    by_old: dict[int, Cluster] = {}
    for cluster in clusters:
        old = _covering(cluster, previous)
        if old is None:
            out.append(cluster)
            continue
        cluster.label, cluster.pinned = old.label, old.pinned
        if old.merged and old.pk in by_old:
            into = by_old[old.pk]
            _absorb(into, cluster)
            continue
        cluster.merged = old.merged
        by_old[old.pk] = cluster
        out.append(cluster)
    return out


def _sizes_by_round(annotation_ids: list[int]) -> dict[str, int]:
    rounds = Counter(
        name or "no round"
        for name in Annotation.objects.filter(pk__in=annotation_ids).values_list("trace__round__name", flat=True)
    )
    return dict(sorted(rounds.items()))


def _absorb(into: Cluster, other: Cluster) -> None:
    into.annotation_ids = sorted(set(into.annotation_ids) | set(other.annotation_ids))
    into.size = len(into.annotation_ids)
    into.terms = list(dict.fromkeys([*into.terms, *other.terms]))[:8]
    into.sizes_by_round = _sizes_by_round(into.annotation_ids)
    into.merged = True


def cluster_update(*, cluster: Cluster, label: str | None = None, pinned: bool | None = None) -> Cluster:
    """Rename (an empty label goes back to its terms) or pin/unpin a cluster."""
    fields = []
    if label is not None:
        label = " ".join(label.split())
        if len(label) > 200:
            raise Invalid(gettext("label: at most 200 characters"))
        cluster.label = label
        fields.append("label")
    if pinned is not None:
        cluster.pinned = pinned
        fields.append("pinned")
    if fields:
        cluster.save(update_fields=fields)
    return cluster


def cluster_merge(*, cluster: Cluster, other_id: int) -> Cluster:
    """Merge another cluster of the same clustering and kind into ``cluster``: the corrections of both, one row."""
    with transaction.atomic():
        other = Cluster.objects.select_for_update().filter(pk=other_id, run_id=cluster.run_id).first()
        if other is None:
            raise Invalid(
                gettext("other: cluster %(other)s is not in clustering run %(run)s")
                % {"other": other_id, "run": cluster.run_id}
            )
        if other.pk == cluster.pk:
            raise Invalid(gettext("other: a cluster cannot be merged into itself"))
        if other.kind != cluster.kind:
            raise Invalid(
                gettext("other: a %(other)s cluster cannot be merged into a %(kind)s cluster")
                % {"other": other.kind, "kind": cluster.kind}
            )
        cluster = Cluster.objects.select_for_update().get(pk=cluster.pk)
        _absorb(cluster, other)
        cluster.pinned = cluster.pinned or other.pinned
        cluster.label = cluster.label or other.label
        cluster.save()
        other.delete()
    return cluster


def cluster_slice_create(*, cluster: Cluster, user: User, name: str = "") -> Slice:
    """The one-click slice of a cluster: its accepted corrections, by id."""
    return slice_create(
        project=cluster.run.project,
        user=user,
        name=name or f"cluster: {cluster.display_name}"[:120],
        query={"ids": cluster.annotation_ids, "status": AnnotationStatus.ACCEPTED},
    )
