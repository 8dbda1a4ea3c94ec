"""Writes of the insights app: the search index, slices, cluster runs."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Annotation, AnnotationStatus, Verdict
from insights import signature
from insights.models import Cluster, ClusterRun, SearchEntry, Slice
from studio.engine import task_send
from studio.errors import Conflict, Invalid
from traces.models import Project, Step

# --- the search index ------------------------------------------------------------------------


def _document(annotation: Annotation, step: Step | None) -> str:
    parts = [
        annotation.trace.instruction,
        step.thought if step else "",
        step.action_text if step else "",
        annotation.corrected_thought,
        annotation.corrected_action,
        annotation.reflection_thought,
        annotation.reflection_action,
        annotation.note,
        annotation.review_comment,
        annotation.error_category,
    ]
    return "\n".join(p for p in parts if p).lower()


def search_entry_refresh(*, annotation_id: int) -> SearchEntry | None:
    """Make the annotation's search entry what the annotation says now; an annotation without a first error has
    none (search finds corrections: a step card needs a τ), nor has a draft (search finds corrections handed in;
    insights.receivers skips a draft's autosaves for that reason)."""
    annotation = Annotation.objects.select_related("trace", "trace__project").filter(pk=annotation_id).first()
    if (
        annotation is None
        or annotation.status == AnnotationStatus.DRAFT
        or annotation.verdict != Verdict.ERROR
        or not annotation.tau
    ):
        SearchEntry.objects.filter(annotation_id=annotation_id).delete()
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
        "document": _document(annotation, step),
        "status": annotation.status,
        "verdict": annotation.verdict,
        "category": annotation.error_category,
        "recorded_type": recorded.type if recorded else "",
        "corrected_type": corrected.type if corrected else "",
        "displacement": bucket,
        "direction": direction,
        "position": signature.position(annotation.tau, trace.step_count),
        "tau": annotation.tau,
        "step_count": trace.step_count,
        "platform": str(metadata.get("platform") or trace.project.platform)[:40],
        "app": signature.app_of(metadata),
        "annotation_version": annotation.version,
    }
    entry, _ = SearchEntry.objects.update_or_create(annotation_id=annotation.pk, defaults=values)
    return entry


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


def slice_create(*, project: Project, user, name: str, query: dict) -> Slice:
    from insights.selectors import search_query_parse

    name = (name or "").strip()
    if not name:
        raise Invalid("a slice needs a name", field="name")
    if len(name) > 120:
        raise Invalid("a slice's name has at most 120 characters", field="name")
    parsed = search_query_parse(query)
    try:
        with transaction.atomic():
            return Slice.objects.create(project=project, name=name, query=parsed.to_json(), created_by=user)
    except IntegrityError:
        raise Conflict(f"this project already has a slice named {name!r}") from None


def slice_delete(*, slice_: Slice) -> None:
    slice_.delete()


# --- clusters -----------------------------------------------------------------------------------

TOKEN = re.compile(r"[a-z][a-z]+")
STOP_WORDS = frozenset(
    "a an and are as at be been before but by for from has have i in into is it its of on or should that the then "
    "this to was were will with instead not first".split()
)
TEXT_SIMILARITY = 0.3  # cosine similarity above which two corrections' texts join one cluster
MIN_TEXT_CLUSTER = 2


def cluster_run_create(*, project: Project, user, enqueue: bool = True) -> ClusterRun:
    run = ClusterRun.objects.create(project=project, created_by=user)
    if enqueue:
        transaction.on_commit(lambda: task_send("insights.tasks.run_clustering", args=[run.pk]))
    return run


def _tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOP_WORDS]


def _tfidf(texts: list[str]) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Unit-length TF-IDF vectors (sparse, term -> weight) and each term's idf."""
    docs = [Counter(_tokens(t)) for t in texts]
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


def text_clusters(texts: list[str]) -> tuple[list[int], str]:
    """A cluster label per text (-1: alone) and the method's name. Average-linkage agglomerative clustering on the
    TF-IDF cosine distance: scikit-learn's where it is installed, else the same linkage in plain Python."""
    if len(texts) < 2:
        return [-1] * len(texts), "none"
    try:
        from sklearn.cluster import AgglomerativeClustering
        from sklearn.feature_extraction.text import TfidfVectorizer
    except ImportError:
        return _agglomerate(texts), "tf-idf average linkage (python)"
    matrix = TfidfVectorizer(token_pattern=TOKEN.pattern, stop_words=sorted(STOP_WORDS)).fit_transform(texts)
    model = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=1 - TEXT_SIMILARITY
    )
    labels = [int(v) for v in model.fit_predict(matrix.toarray())]
    return labels, "tf-idf average linkage (scikit-learn)"


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


def distinctive_terms(texts: list[str], members: list[int], *, top: int = 4) -> list[str]:
    """The terms that weigh most in the members' texts against the whole set (summed TF-IDF)."""
    vectors, _ = _tfidf(texts)
    weight: Counter[str] = Counter()
    for i in members:
        weight.update(vectors[i])
    return [term for term, _ in weight.most_common(top)]


def cluster_run_compute(*, run_id: int) -> ClusterRun:
    """Group the project's accepted corrections by signature and by text; idempotent (a rerun replaces them)."""
    from insights.selectors import correction_rows

    run = ClusterRun.objects.select_related("project").get(pk=run_id)
    ClusterRun.objects.filter(pk=run.pk).update(status=ClusterRun.Status.RUNNING)
    try:
        rows = correction_rows(run.project)
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
        texts = [row["text"] for row in rows]
        labels, method = text_clusters(texts)
        groups: dict[int, list[int]] = defaultdict(list)
        for i, label in enumerate(labels):
            if label >= 0:
                groups[label].append(i)
        for indices in groups.values():
            if len(indices) < MIN_TEXT_CLUSTER:
                continue
            terms = distinctive_terms(texts, indices)
            clusters.append(_cluster(run, Cluster.Kind.TEXT, ", ".join(terms), terms, [rows[i] for i in indices]))
        with transaction.atomic():
            run.clusters.all().delete()
            Cluster.objects.bulk_create(clusters)
            ClusterRun.objects.filter(pk=run.pk).update(
                status=ClusterRun.Status.SUCCEEDED, method=method, corrections=len(rows), finished_at=timezone.now()
            )
    except Exception as exc:
        ClusterRun.objects.filter(pk=run.pk).update(
            status=ClusterRun.Status.FAILED, message=str(exc)[:500], finished_at=timezone.now()
        )
        raise
    run.refresh_from_db()
    return run


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


def cluster_slice_create(*, cluster: Cluster, user, name: str = "") -> Slice:
    """The one-click slice of a cluster: its accepted corrections, by id."""
    return slice_create(
        project=cluster.run.project,
        user=user,
        name=name or f"cluster: {cluster.name}"[:120],
        query={"ids": cluster.annotation_ids, "status": AnnotationStatus.ACCEPTED},
    )
