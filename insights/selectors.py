"""Reads of the insights app: search with facets, step cards, slice trends, corrections to cluster, judge alignment."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connections
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    FloatField,
    Q,
    QuerySet,
    Value,
    When,
    Window,
)
from django.db.models.expressions import RawSQL
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy

from annotation.models import Annotation, AnnotationStatus, Verdict
from insights import search_text
from insights.models import Cluster, ClusterRun, SearchEntry, Slice
from prescoring.models import PrescoreJob, StepSuggestion, TraceSuggestion
from studio.access import can
from studio.errors import Invalid
from studio.inputs import id_from_text
from studio.models import JobStatus
from traces.models import Project, Round

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import Expression

# Facet name -> the search entry's column. Filters and counts use the same table.
FACETS: dict[str, str] = {
    "category": "category",
    "recorded_type": "recorded_type",
    "corrected_type": "corrected_type",
    "displacement": "displacement",
    "direction": "direction",
    "position": "position",
    "platform": "platform",
    "app": "app",
    "round": "round_id",
    "annotator": "annotator_id",
    "verdict": "verdict",
    "status": "status",
    "checkpoint": "round__checkpoint",
    "agreement": "agreement",
    "suspicion": "suspicion_bucket",
}
ID_FACETS = {"round", "annotator"}

# The words a facet's stored value is shown in, on the search page's filters and cards (the value stays what a filter
# sends): the vocabularies the studio writes itself (insights.signature's buckets, the agreement, the suspicion, the
# answer's verdict and state). A category, a platform, an app or an action type is the project's or the trace's word.
FACET_VALUE_WORDS: dict[str, dict[str, Any]] = {
    "displacement": {
        "under 2%": gettext_lazy("under 2%"),
        "2–10%": gettext_lazy("2–10%"),
        "10–30%": gettext_lazy("10–30%"),
        "over 30%": gettext_lazy("over 30%"),
        "no point": gettext_lazy("no point"),
    },
    "direction": {
        "right": pgettext_lazy("direction", "right"),
        "left": pgettext_lazy("direction", "left"),
        "up": pgettext_lazy("direction", "up"),
        "down": pgettext_lazy("direction", "down"),
    },
    "position": {"early": gettext_lazy("early"), "middle": gettext_lazy("middle"), "late": gettext_lazy("late")},
    "recorded_type": {"unparsed": gettext_lazy("unparsed")},
    "corrected_type": {"unparsed": gettext_lazy("unparsed")},
    "verdict": {value: label for value, label in Verdict.choices if value},
    "status": dict(AnnotationStatus.choices),
    "agreement": {"same τ": gettext_lazy("same τ"), "other τ": gettext_lazy("other τ")},
    "suspicion": {"high": gettext_lazy("high"), "medium": gettext_lazy("medium"), "low": gettext_lazy("low")},
}


def facet_value_words(name: str, value: str) -> str:
    """``value`` of facet ``name`` in the reader's words (``FACET_VALUE_WORDS``), else as it is stored."""
    return str(FACET_VALUE_WORDS.get(name, {}).get(value, value))


MAX_QUERY = 500
MAX_TERMS = 32
MAX_IDS = 100_000


@dataclass(frozen=True)
class SearchQuery:
    q: str = ""
    filters: dict[str, str] = field(default_factory=dict)
    ids: tuple[int, ...] | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"q": self.q, **self.filters} if self.q else dict(self.filters)
        if self.ids is not None:
            out["ids"] = list(self.ids)
        return out

    def groups(self) -> list[tuple[search_text.Term, ...]]:
        """The terms of ``q`` in groups (``search_text.query_groups``): every group must match, any term of a group."""
        return search_text.query_groups(self.q)


def _clean_text(value: str) -> str:
    """Text a database takes: no NUL or other control characters (PostgreSQL refuses NUL in text), no lone
    surrogates (a JSON body may hold one; neither database encodes it)."""
    value = value.encode("utf-8", "replace").decode("utf-8")
    return "".join(c if c.isprintable() or c in " \t\n" else " " for c in value)


def search_query_parse(raw: Any) -> SearchQuery:
    """A search from a query string or JSON: ``q`` and facet filters; an unknown key or a bad id is refused."""
    if hasattr(raw, "getlist"):
        raw = {k: raw.get(k) for k in raw}
    if not isinstance(raw, dict):
        raise Invalid(gettext("a search is an object of q and facet filters"))
    unknown = sorted(set(raw) - {"q", "ids", "page", "format", *FACETS})
    if unknown:
        raise Invalid(
            gettext("unknown search field(s): %(fields)s; facets are %(facets)s")
            % {"fields": ", ".join(unknown), "facets": ", ".join(FACETS)}
        )
    q = raw.get("q") or ""
    if not isinstance(q, str) or len(q) > MAX_QUERY:
        raise Invalid(gettext("q must be text of at most %(most)s characters") % {"most": MAX_QUERY}, field="q")
    q = _clean_text(q)
    if len(search_text.query_terms(q)) > MAX_TERMS:
        raise Invalid(gettext("q may hold at most %(most)s words or quoted phrases") % {"most": MAX_TERMS}, field="q")
    filters = {}
    for name in FACETS:
        value = raw.get(name)
        if value in (None, ""):
            continue
        value = _clean_text(str(value))
        if name in ID_FACETS and id_from_text(value) is None:
            raise Invalid(gettext("%(name)s must be an id (a positive integer)") % {"name": name}, field=name)
        filters[name] = value
    ids = raw.get("ids")
    if ids is not None:
        if isinstance(ids, str):
            ids = [p for p in re.split(r"[,\s]+", ids) if p]
        if not isinstance(ids, list) or len(ids) > MAX_IDS or not all(id_from_text(str(i)) is not None for i in ids):
            raise Invalid(gettext("ids must be a list of annotation ids"), field="ids")
        ids = tuple(int(i) for i in ids)
    return SearchQuery(q=q.strip(), filters=filters, ids=ids)


def entries_for(user: User, project: Project) -> QuerySet[SearchEntry]:
    """The entries ``user`` may see: all of the project's for those who see others' corrections, else their own;
    the pre-score suspicion facet only for those who see pre-scoring (a blind project's annotators never do)."""
    entries = SearchEntry.objects.filter(project=project)
    if not can(user, "search.everyone", project):
        entries = entries.filter(annotator_id=user.pk)
    return with_suspicion(entries, visible=can(user, "prescore.view", project))


# The step at τ's pre-score suspicion (the latest scoring of that step), in three buckets for the facet.
SUSPICION_BUCKETS = ((0.7, "high"), (0.3, "medium"), (0.0, "low"))


def with_suspicion(entries: QuerySet[SearchEntry], *, visible: bool) -> QuerySet[SearchEntry]:
    """The facet's bucket, from the entry's own column (migration 0009's triggers keep it), for those who see it."""
    if not visible:
        return entries.annotate(suspicion_bucket=Value("", output_field=CharField()))
    return entries.annotate(
        suspicion_bucket=Case(
            *(When(suspicion__gte=low, then=Value(name)) for low, name in SUSPICION_BUCKETS),
            default=Value(""),
            output_field=CharField(),
        )
    )


def search(entries: QuerySet[SearchEntry], query: SearchQuery) -> QuerySet[SearchEntry]:
    """The entries that match every group of ``q`` (any one term of a group) and every facet filter; with ``q``, those
    whose correction holds the words first (``in_correction``), then best match first (``search_rank``), ties newest
    first; without ``q``, newest first."""
    groups = query.groups()
    vendor = connections[entries.db].vendor
    for group in groups:
        matches = Q()
        for term in group:
            matches |= _term_matches(term, vendor=vendor)
        entries = entries.filter(matches)
    for name, value in query.filters.items():
        entries = entries.filter(**{FACETS[name]: int(value) if name in ID_FACETS else value})
    if query.ids is not None:
        entries = entries.filter(annotation_id__in=query.ids)
    if not groups:
        return entries.order_by("-annotation_id")
    return entries.annotate(
        in_correction=_in_correction(groups, vendor=vendor), search_rank=_rank(groups, vendor=vendor)
    ).order_by("-in_correction", "-search_rank", "-annotation_id")


# Past this many matches a page is newest first: the order an index gives a LIMIT at once, where ranking would score
# every match (1.5 s for a word in nearly all of 80,000 entries) for an order no one reads that far into.
RANKED_MATCHES_MAX = 5_000


def in_page_order(entries: QuerySet[SearchEntry], *, matches: int) -> QuerySet[SearchEntry]:
    """The order a page of ``search``'s entries is read in, given how many there are (``facet_counts``): as
    ``search`` ranks them, or newest first past ``RANKED_MATCHES_MAX``."""
    return entries.order_by("-annotation_id") if matches > RANKED_MATCHES_MAX else entries


# --- full text (migration 0007 keeps the index: a tsvector column on PostgreSQL, an FTS5 table on SQLite) --------
# On both databases the correction (what the annotator wrote) weighs more than the rest of the document.
_FTS5 = "SELECT rowid FROM insights_searchentry_fts WHERE insights_searchentry_fts MATCH %s"
# The scores of every match once (a materialised CTE, looked up by an automatic index), not an FTS5 query per row:
# 15 times faster at a thousand matches.
_FTS5_RANK = (
    "COALESCE((WITH scores AS MATERIALIZED (SELECT rowid AS id, -bm25(insights_searchentry_fts, 4.0, 1.0) AS score "
    "FROM insights_searchentry_fts WHERE insights_searchentry_fts MATCH %s) "
    "SELECT score FROM scores WHERE scores.id = insights_searchentry.id), 0)"
)


_PAIRS = "insights_searchentry.document_pairs"


def _fts5_query(term: search_text.Term) -> str:
    """``term`` as one FTS5 string of its words (FTS5 matches them as a phrase; ``*`` after it: the last word is a
    prefix), so nothing a person types is FTS5 query syntax."""
    return f'"{term.phrase}"' + (" *" if term.prefix else "")


def _pg_query(term: search_text.Term) -> tuple[str, list[str]]:
    """``term`` as a PostgreSQL tsquery: its words in that order; a prefix term's last word may go on. The words are
    letters and digits only (``search_text.WORD``), so quoting them as lexemes is safe."""
    if not term.prefix:
        return "phraseto_tsquery('simple', %s)", [term.phrase]
    lexemes = [f"'{w}'" for w in term.words]
    return "to_tsquery('simple', %s)", [" <-> ".join(lexemes) + ":*"]


_UNSPACED_WORD = re.compile(f"[{search_text.UNSPACED}]+")


def index_matches_hold_the_text(term: search_text.Term) -> bool:
    """Whether every entry PostgreSQL's full-text index finds for ``term`` holds the term's text too, so the LIKE
    alone finds them all. True of one word (not a prefix) of ASCII letters and digits or of an unspaced script's
    characters: the ``simple`` configuration makes such a word one lexeme, the word itself, and finds it only where
    a token of the text is that word (a token is a stretch of the text, lower-cased, and these words have no case
    the two lower-casings could disagree on; the correction is part of the document). Not of a phrase (the index
    lets punctuation and line breaks stand between its words) nor on SQLite (FTS5 folds accents: ``thé`` is
    ``the``)."""
    if term.prefix or len(term.words) != 1:
        return False
    word = term.words[0]
    return (word.isascii() and word.isalnum()) or _UNSPACED_WORD.fullmatch(word) is not None


def _term_matches(term: search_text.Term, *, vendor: str) -> Q:
    """Where a term matches. A fragment (action syntax, no words): where its text occurs as written, in the words
    or the actions (LIKE: the trigram indexes on PostgreSQL, a scan on SQLite). A term of words: where its words
    occur in that order in the full-text index (across punctuation and line breaks; on SQLite also without
    accents), or where they occur as text in the words (partial words, scripts without spaces); a prefix term only
    by the index."""
    if not term.words:
        return Q(document__contains=term.text) | Q(actions__contains=term.text)
    contains = Q() if term.prefix else Q(document__contains=term.phrase)
    if vendor == "postgresql":
        pairs = search_text.unspaced_bigrams(term.phrase)
        if pairs and not term.prefix:
            # The index of the documents' pairs (migration 0009) finds where a word of an unspaced script may be;
            # the LIKE checks it there. The trigram indexes need three characters; without this, a scan.
            contains &= Q(RawSQL(f"{_PAIRS} @> %s::text[]", [pairs], BooleanField()))
        if index_matches_hold_the_text(term):
            # The index finds nothing the LIKE does not: asking it too would read the tsvector (out of line, in
            # TOAST) of every entry the LIKE turns down, most of a common word's count.
            return contains
        sql, params = _pg_query(term)
        return contains | Q(RawSQL(f"insights_searchentry.document_vector @@ {sql}", params, BooleanField()))
    if vendor == "sqlite":
        return contains | Q(pk__in=RawSQL(_FTS5, [_fts5_query(term)]))
    return Q(document__contains=term.phrase)


def _ranked(groups: list[tuple[search_text.Term, ...]]) -> list[tuple[search_text.Term, ...]]:
    """The groups the full-text index can rank: those of words only (a fragment has no words to weigh)."""
    return [g for g in groups if all(t.words for t in g)]


def _rank(groups: list[tuple[search_text.Term, ...]], *, vendor: str) -> Expression:
    """How well an entry matches: PostgreSQL's ``ts_rank`` (length-normalised) or SQLite's ``bm25`` (negated: more
    is better on both) against any of the terms' words; 0 where only the LIKE found it."""
    terms = [t for g in _ranked(groups) for t in g]
    if not terms or vendor not in {"postgresql", "sqlite"}:
        return Value(0.0, output_field=FloatField())
    if vendor == "postgresql":
        queries = [_pg_query(t) for t in terms]
        either = " || ".join(sql for sql, _ in queries)
        params = [p for _, ps in queries for p in ps]
        return RawSQL(f"ts_rank(insights_searchentry.document_vector, {either}, 1)", params, output_field=FloatField())
    return RawSQL(_FTS5_RANK, [" OR ".join(_fts5_query(t) for t in terms)], output_field=FloatField())


def _in_correction(groups: list[tuple[search_text.Term, ...]], *, vendor: str) -> Expression:
    """Whether the entry's correction (the index's weighted part) holds every group of words: such entries come
    first, whatever the instruction or the recorded step say."""
    ranked = _ranked(groups)
    if not ranked or vendor not in {"postgresql", "sqlite"}:
        return Value(False, output_field=BooleanField())
    if vendor == "postgresql":
        parts, params = [], []
        for group in ranked:
            queries = [_pg_query(t) for t in group]
            parts.append("(" + " || ".join(sql for sql, _ in queries) + ")")
            params += [p for _, ps in queries for p in ps]
        return RawSQL(
            f"ts_filter(insights_searchentry.document_vector, '{{a}}') @@ ({' && '.join(parts)})",
            params,
            output_field=BooleanField(),
        )
    match = " AND ".join("(" + " OR ".join(_fts5_query(t) for t in group) + ")" for group in ranked)
    return RawSQL(f"insights_searchentry.id IN ({_FTS5})", [f"{{head}} : ({match})"], output_field=BooleanField())


# Up to this many matches, SQLite counts the facets from one read of the matches' facet columns; past it, by one
# GROUP BY of all facet columns (the database counts; the distinct combinations come back).
FACETS_IN_ONE_READ = 20_000


def facet_counts(entries: QuerySet[SearchEntry], project: Project) -> tuple[int, dict[str, list[dict]]]:
    """How many entries match, and per facet each value's count among them (the search as filtered), most first;
    ids get their names."""
    if connections[entries.db].vendor == "postgresql":
        total, counted = _facet_counts_grouping_sets(entries)
    else:
        total, counted = _facet_counts_read(entries)
    return total, _facet_values(counted, project)


# Past this many matches the facets are counted among the newest this many (the count stays exact): counting them
# reads every match's row, most of a search's time when a word is in nearly every entry.
FACETS_COUNTED_MAX = 10_000


@dataclass(frozen=True)
class SearchCounts:
    count: int  # every match
    facets: dict[str, list[dict]]
    facets_of: int  # how many of the matches the facet counts count: all of them, or the newest FACETS_COUNTED_MAX
    page_ids: list[int] | None = None  # the page asked for, where the count's read gave it (newest first)


def search_counts(
    entries: QuerySet[SearchEntry],
    project: Project,
    *,
    most: int | None = None,
    page: tuple[int, int] | None = None,
) -> SearchCounts:
    """How many entries match, and the facet counts (``facet_counts``) among every match, or past ``most`` matches
    (``FACETS_COUNTED_MAX``) among the newest ``most``: the count alone needs no facet column of the rows past them.
    ``page`` (offset, limit) of a search whose count reads every match (a text search): past ``most`` matches
    (newest first, past ``RANKED_MATCHES_MAX``) that read gives the ids of a page past the newest ``most`` too."""
    most = FACETS_COUNTED_MAX if most is None else most
    of, facets = facet_counts(entries.order_by("-annotation_id")[:most], project)
    if of < most:  # fewer than ``most`` counted: they are every match
        return SearchCounts(count=of, facets=facets, facets_of=of)
    # A page among the newest ``most`` is found by reading no more than them; one further in by reading every row
    # before it (or after it: ``page_ids``), a second read of up to half the matches beside the count's. The page's
    # order is newest first only past RANKED_MATCHES_MAX.
    if page is None or page[0] < most or most <= RANKED_MATCHES_MAX:
        return SearchCounts(count=entries.order_by().count(), facets=facets, facets_of=of)
    offset, limit = page
    # The count beside each row of the page (a window over every match): one read of the matches.
    rows = list(
        entries.order_by("-annotation_id")
        .annotate(matches=Window(Count("pk")))
        .values_list("pk", "matches")[offset : offset + limit]
    )
    count = rows[0][1] if rows else entries.order_by().count()  # past the last match: no row says the count
    return SearchCounts(count=count, facets=facets, facets_of=of, page_ids=[pk for pk, _ in rows])


def _facet_counts_grouping_sets(entries: QuerySet[SearchEntry]) -> tuple[int, dict[str, Counter]]:
    """PostgreSQL: every facet counted in one pass over the matches (``GROUPING SETS``), two facets a set: a row comes
    back for each pair of values that occurs (each facet's counts are their sums), not one for every combination of
    the fifteen (nearly one a match), and each match goes into half the hash tables a set a facet took. The checkpoint
    is its round's: counted from the rounds' counts, with no join a match."""
    # A slice (the newest so many) keeps its order: the LIMIT chooses the rows.
    ordered = entries if entries.query.is_sliced else entries.order_by()
    facets = [name for name in FACETS if name != "checkpoint"]
    sql, params = ordered.values_list(*(FACETS[name] for name in facets)).query.sql_with_params()
    names = [f"f{i}" for i in range(len(facets))]
    columns = ", ".join(names)
    sets = ", ".join(f"({', '.join(names[i : i + 2])})" for i in range(0, len(names), 2))
    counted: dict[str, Counter] = {name: Counter() for name in FACETS}
    # GROUPING(f0, …, fn) has a bit set for each column its row is not grouped by, the first column's highest.
    bits = [1 << (len(names) - 1 - i) for i in range(len(names))]
    with connections[entries.db].cursor() as cursor:
        cursor.execute(
            f"SELECT GROUPING({columns}), {columns}, COUNT(*) FROM ({sql}) AS matches ({columns}) "
            f"GROUP BY GROUPING SETS ({sets})",
            params,
        )
        for grouping, *values, n in cursor.fetchall():
            for name, bit, value in zip(facets, bits, values, strict=True):
                if not grouping & bit:
                    counted[name][value] += n
    rounds = [pk for pk in counted["round"] if pk is not None]
    checkpoints = dict(Round.objects.using(entries.db).filter(pk__in=rounds).values_list("pk", "checkpoint"))
    for round_id, n in counted["round"].items():
        counted["checkpoint"][checkpoints.get(round_id)] += n
    return sum(counted["status"].values()), counted


def _facet_counts_read(entries: QuerySet[SearchEntry]) -> tuple[int, dict[str, Counter]]:
    columns = list(FACETS.values())
    if entries.query.is_sliced:  # the newest so many (``search_counts``): fewer than FACETS_IN_ONE_READ
        rows = list(entries.values_list(*columns))
        return len(rows), {name: Counter(row[i] for row in rows) for i, name in enumerate(FACETS)}
    rows = list(entries.order_by().values_list(*columns)[: FACETS_IN_ONE_READ + 1])
    if len(rows) <= FACETS_IN_ONE_READ:
        return len(rows), {name: Counter(row[i] for row in rows) for i, name in enumerate(FACETS)}
    # One GROUP BY over every facet column together (the text matched once, not once a facet).
    total = 0
    counted: dict[str, Counter] = {name: Counter() for name in FACETS}
    grouped = entries.order_by().values_list(*columns).annotate(n=Count("pk"))
    for *values, n in grouped.iterator(chunk_size=5000):
        total += n
        for name, value in zip(FACETS, values, strict=True):
            counted[name][value] += n
    return total, counted


def _facet_values(counted: dict[str, Counter], project: Project) -> dict[str, list[dict]]:
    rounds = dict(Round.objects.filter(project=project).values_list("pk", "name"))
    users: dict[int, str] = {}
    if counted["annotator"]:
        from django.contrib.auth import get_user_model

        users = dict(get_user_model().objects.filter(pk__in=list(counted["annotator"])).values_list("pk", "username"))
    out: dict[str, list[dict]] = {}
    for name, counts in counted.items():
        names = rounds if name == "round" else users if name == "annotator" else {}
        out[name] = [
            {"value": str(value), "label": names.get(value) or facet_value_words(name, str(value)), "count": n}
            for value, n in sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
            if value not in (None, "")
        ]
    return out


CARD_CHUNK = 2000


def page_ids(entries: QuerySet[SearchEntry], *, limit: int, offset: int, matches: int | None = None) -> list[int]:
    """The ids of the page of ``entries`` (in their order) that begins at ``offset``. A database finds a page by
    reading every row before it, so newest first with ``matches`` (how many ``entries`` holds) known, a page in the
    older half is read from the oldest end, oldest first, and turned round: at most half the matches are skipped.
    A page past the last match is empty without a read."""
    if not entries.query.order_by:
        entries = entries.order_by("-annotation_id")
    newest_first = tuple(entries.query.order_by) == ("-annotation_id",)
    if matches is None or not newest_first:
        return list(entries.values_list("pk", flat=True)[offset : offset + limit])
    if offset >= matches:
        return []
    end = min(matches, offset + limit)
    if offset <= matches - end:
        return list(entries.values_list("pk", flat=True)[offset:end])
    # annotation_id is unique (one entry an annotation): oldest first is exactly newest first turned round.
    from_oldest = entries.order_by("annotation_id").values_list("pk", flat=True)
    return list(from_oldest[matches - end : matches - offset])[::-1]


def step_cards(
    entries: QuerySet[SearchEntry],
    *,
    limit: int = 50,
    offset: int = 0,
    matches: int | None = None,
    ids: list[int] | None = None,
) -> list[dict]:
    """Step cards: the screenshot at τ with the recorded and corrected points, the two actions side by side;
    ``matches``: how many ``entries`` holds, where it is known (``page_ids``); ``ids``: the page's, where they are
    known (``search_counts``)."""
    from insights import signature

    # The page's ids first, from the entries alone, then their cards: the joins for a page's rows only, not for
    # every row a deep page skips.
    if ids is None:
        ids = page_ids(entries, limit=limit, offset=offset, matches=matches)
    place = {pk: i for i, pk in enumerate(ids)}
    # The columns a card shows, not model instances: eight of them a card (every column of each) were most of a
    # page's time in Python.
    joined = SearchEntry.objects.using(entries.db).values(*_CARD_COLUMNS)
    # In chunks (the CSV's many ids: SQLite takes a few thousand parameters a statement).
    rows = sorted(
        (e for i in range(0, len(ids), CARD_CHUNK) for e in joined.filter(pk__in=ids[i : i + CARD_CHUNK])),
        key=lambda e: place[e["pk"]],
    )
    cards = []
    for e in rows:
        has_step, has_shot = e["step_id"] is not None, e["step__screenshot_id"] is not None
        shot = (e["step__screenshot__width"], e["step__screenshot__height"]) if has_shot else None
        recorded = signature.action_point(signature.first_action(e["step__action_text"])) if has_step else None
        corrected = signature.action_point(signature.first_action(e["annotation__corrected_action"]))
        max_pixels = e["trace__project__max_pixels"]
        cards.append(
            {
                "annotation_id": e["annotation_id"],
                "trace_id": e["trace_id"],
                "instruction": e["trace__instruction"],
                "language": e["trace__language"],
                "tau": e["tau"],
                "step_count": e["step_count"],
                "round": e["round__name"] if e["round_id"] is not None else "",
                "annotator": e["annotator__username"],
                "status": e["status"],
                "status_words": facet_value_words("status", e["status"]),
                "category": e["category"],
                "displacement": e["displacement"],
                "displacement_words": facet_value_words("displacement", e["displacement"]),
                "direction": e["direction"],
                "direction_words": facet_value_words("direction", e["direction"]),
                "recorded_thought": e["step__thought"] if has_step else "",
                "recorded_action": e["step__action_text"] if has_step else "",
                "corrected_thought": e["annotation__corrected_thought"],
                "corrected_action": e["annotation__corrected_action"],
                "note": e["annotation__note"],
                "screenshot": e["step__screenshot__sha256"] if has_shot else None,
                "width": shot[0] if shot else None,
                "height": shot[1] if shot else None,
                "convention": e["trace__coordinate_convention"],
                "recorded_point": _screen_point(
                    recorded, shot, convention=e["trace__coordinate_convention"], max_pixels=max_pixels
                ),
                "corrected_point": _screen_point(
                    corrected, shot, convention=e["trace__project__coordinate_convention"], max_pixels=max_pixels
                ),
            }
        )
    return cards


_CARD_COLUMNS = (
    "pk",
    "annotation_id",
    "trace_id",
    "step_id",
    "round_id",
    "tau",
    "step_count",
    "status",
    "category",
    "displacement",
    "direction",
    "trace__instruction",
    "trace__language",
    "trace__coordinate_convention",
    "trace__project__coordinate_convention",
    "trace__project__max_pixels",
    "round__name",
    "annotator__username",
    "step__thought",
    "step__action_text",
    "step__screenshot_id",
    "step__screenshot__sha256",
    "step__screenshot__width",
    "step__screenshot__height",
    "annotation__corrected_thought",
    "annotation__corrected_action",
    "annotation__note",
)


def _screen_point(
    point: tuple[float, float] | None, shot: tuple[int, int] | None, *, convention: str, max_pixels: int
) -> list[float] | None:
    """A point as a share of the screenshot (``shot``: its width and height; 0..1 on each axis), for drawing over a
    thumbnail of any size; read in ``convention`` (a recorded step's: its trace's; a correction's: its project's)."""
    from traces import grammar

    if point is None or shot is None:
        return None
    width, height = shot
    x, y = grammar.to_screen_pixels(point, convention=convention, width=width, height=height, max_pixels=max_pixels)
    return [round(x / width, 4), round(y / height, 4)]


CSV_HEADER = [
    "annotation_id",
    "trace_id",
    "tau",
    "step_count",
    "round",
    "annotator",
    "status",
    "category",
    "recorded_action",
    "corrected_action",
    "displacement",
    "direction",
    "corrected_thought",
    "note",
]


def search_csv_rows(entries: QuerySet[SearchEntry]) -> list[list]:
    cards = step_cards(entries, limit=MAX_IDS)
    return [CSV_HEADER, *([card[c] for c in CSV_HEADER] for card in cards)]


# --- slices ---------------------------------------------------------------------------------------


def slices_of(project: Project, slices: QuerySet[Slice]) -> QuerySet[Slice]:
    return slices.filter(project=project).order_by("name")


def slice_entries(slice_: Slice, user: User) -> QuerySet[SearchEntry]:
    return search(entries_for(user, slice_.project), search_query_parse(slice_.query))


def slice_trend(slice_: Slice, user: User) -> list[dict]:
    """The slice's count per round, rounds in the order they ran (zero where it found nothing); corrections of
    traces in no round come last as "no round" when there are any."""
    entries = slice_entries(slice_, user)
    counts = dict(entries.order_by().values_list("round_id").annotate(n=Count("pk")))
    totals = dict(entries_for(user, slice_.project).order_by().values_list("round_id").annotate(n=Count("pk")))
    rounds = Round.objects.filter(project=slice_.project).order_by("ran_at", "id")
    trend = [
        {
            "round": r.pk,
            "name": r.name,
            "checkpoint": r.checkpoint,
            "count": counts.get(r.pk, 0),
            "of": totals.get(r.pk, 0),
        }
        for r in rounds
    ]
    if counts.get(None):
        trend.append(
            {"round": None, "name": "no round", "checkpoint": "", "count": counts[None], "of": totals.get(None, 0)}
        )
    return trend


def slice_compare(slice_: Slice, user: User, *, by: str, before: str, after: str) -> dict:
    """The slice between two rounds (``by="round"``: round ids) or two checkpoints (``by="checkpoint"``: the
    rounds of each checkpoint together): how many of each side's corrections the slice holds, their share, and the
    change in points — did the newer checkpoint make this mistake less often?"""
    if by not in {"round", "checkpoint"}:
        raise Invalid(gettext("by: round or checkpoint"), field="by")
    rounds = Round.objects.filter(project=slice_.project)
    sides: dict[str, dict[str, Any]] = {}
    shares: dict[str, float | None] = {}
    for field_name, value in (("before", before), ("after", after)):
        if by == "round":
            round_id = id_from_text(str(value or ""))
            chosen = rounds.filter(pk=round_id) if round_id is not None else rounds.none()
            if not chosen.exists():
                raise Invalid(
                    gettext("%(field)s: no round %(value)s in this project")
                    % {"field": field_name, "value": repr(value)},
                    field=field_name,
                )
            label = chosen.get().name
        else:
            chosen = rounds.filter(checkpoint=str(value or ""))
            if not chosen.exists():
                raise Invalid(
                    gettext("%(field)s: no round of checkpoint %(value)s in this project")
                    % {"field": field_name, "value": repr(value)},
                    field=field_name,
                )
            label = str(value)
        ids = list(chosen.values_list("pk", flat=True))
        count = slice_entries(slice_, user).filter(round_id__in=ids).count()
        of = entries_for(user, slice_.project).filter(round_id__in=ids).count()
        shares[field_name] = round(count / of, 4) if of else None
        sides[field_name] = {"label": label, "count": count, "of": of, "share": shares[field_name]}
    a, b = shares["before"], shares["after"]
    change = round(100 * (b - a), 2) if a is not None and b is not None else None
    if change is None:
        words = "no corrections on one side to compare"
    else:
        words = "no change" if change == 0 else f"{'down' if change < 0 else 'up'} {abs(change):g} points"
    return {"by": by, **sides, "change_points": change, "change_words": words}


def slice_queue_state(slice_: Slice, user: User) -> dict:
    """How many of the slice's traces a lead sent back to the queue, and how many of those still wait for their
    extra answer."""
    from annotation.models import QueueRequest
    from annotation.overlap import project_quota

    trace_ids = set(slice_entries(slice_, user).order_by().values_list("trace_id", flat=True))
    # Each request's quota from the row read here (the project's overlap plus its extra answers): no read per trace.
    extra = dict(QueueRequest.objects.filter(trace_id__in=trace_ids).values_list("trace_id", "extra_answers"))
    answers = Counter(
        Annotation.objects.filter(trace_id__in=list(extra))
        .exclude(status=AnnotationStatus.DRAFT)
        .values_list("trace_id", flat=True)
    )
    waiting = sum(1 for t, n in extra.items() if answers[t] < project_quota(trace_id=t, project=slice_.project) + n)
    return {"slice_traces": len(trace_ids), "in_queue": len(extra), "waiting": waiting}


def slice_annotation_ids(*, project: Project, slice_id: int) -> list[int]:
    """The annotations a slice holds (all of them, whoever asks: an export is the engineers' and leads'), for the
    export's annotation selection. A slice of another project is refused by name."""
    slice_ = Slice.objects.filter(pk=slice_id, project=project).first()
    if slice_ is None:
        raise Invalid(gettext("slice %(id)s is not one of this project's slices") % {"id": slice_id}, field="slice")
    entries = search(
        with_suspicion(SearchEntry.objects.filter(project=project), visible=True), search_query_parse(slice_.query)
    )
    return sorted(entries.order_by().values_list("annotation_id", flat=True))


# --- clusters -------------------------------------------------------------------------------------


def correction_rows(project: Project) -> list[dict]:
    """The project's accepted corrections with their signature and text, in annotation order (columns only: a
    clustering of 100,000 corrections holds no model instances)."""
    rows = (
        SearchEntry.objects.filter(project=project, status=AnnotationStatus.ACCEPTED)
        .order_by("annotation_id")
        .values_list(
            "annotation_id",
            "recorded_type",
            "corrected_type",
            "displacement",
            "category",
            "round__name",
            "annotation__corrected_thought",
            "annotation__note",
        )
    )
    return [
        {
            "annotation_id": annotation_id,
            "recorded_type": recorded_type,
            "corrected_type": corrected_type,
            "displacement": displacement,
            "category": category,
            "round": round_name or "",
            "text": f"{thought}\n{note}",
        }
        for annotation_id, recorded_type, corrected_type, displacement, category, round_name, thought, note in (
            rows.iterator(chunk_size=5000)
        )
    ]


CLUSTER_EXAMPLES = 3
# The examples are ranked among this many of a cluster's corrections (its oldest): the clusters page shows every
# cluster's examples, and a cluster of 10,000 corrections need not have all its texts read to show three.
CLUSTER_EXAMPLES_RANKED = 300


def cluster_examples(cluster: Cluster, user: User, *, limit: int = CLUSTER_EXAMPLES) -> list[dict]:
    """A cluster's typical corrections as step cards (screenshot at τ with both points): the ones whose text is
    closest to the cluster's distinctive terms come first, so the examples show what names it."""
    members = sorted(cluster.annotation_ids)[:CLUSTER_EXAMPLES_RANKED]
    entries = entries_for(user, cluster.run.project).filter(annotation_id__in=members)
    terms = [str(t).lower() for t in cluster.terms if isinstance(t, str)]
    ranked = sorted(
        entries.values_list("annotation_id", "document"),
        key=lambda row: (-sum(row[1].count(t) for t in terms), row[0]),
    )
    chosen = [annotation_id for annotation_id, _ in ranked[:limit]]
    cards = {card["annotation_id"]: card for card in step_cards(entries.filter(annotation_id__in=chosen), limit=limit)}
    return [cards[i] for i in chosen if i in cards]


def latest_cluster_run(project: Project) -> ClusterRun | None:
    return ClusterRun.objects.filter(project=project).order_by("-created_at", "-id").first()


def clustered_run(project: Project) -> ClusterRun | None:
    """The newest run that ended with its clusters (succeeded): what the clusters page shows while a newer run is
    queued or running, or after one failed or was cancelled."""
    return ClusterRun.objects.filter(project=project, status=JobStatus.SUCCEEDED).order_by("-created_at", "-id").first()


CLUSTERS_PAGE_SIZE = 25
MERGE_CANDIDATES = 20


def cluster_page(run: ClusterRun, *, page: int, size: int = CLUSTERS_PAGE_SIZE) -> dict:
    """One page of a run's clusters (pinned first, then by kind and size): ``clusters``, ``page`` (clamped to the
    pages there are), ``pages``, ``count``, and how many clusters of each kind the run holds (a card offers a merge
    only where another cluster of its kind exists)."""
    clusters = run.clusters.all()
    by_kind = dict(clusters.order_by().values_list("kind").annotate(n=Count("id")))
    count = sum(by_kind.values())
    pages = max(1, -(-count // size))
    page = min(max(1, page), pages)
    return {
        "clusters": list(clusters[(page - 1) * size : page * size]),
        "page": page,
        "pages": pages,
        "count": count,
        "by_kind": by_kind,
    }


def _merge_candidates(cluster: Cluster, named_like: str = "") -> QuerySet[Cluster]:
    """The other clusters of ``cluster``'s run and kind, those whose name or label holds every word of
    ``named_like`` (any case) when it is given, largest first."""
    found = Cluster.objects.filter(run_id=cluster.run_id, kind=cluster.kind).exclude(pk=cluster.pk)
    for word in named_like.split():
        found = found.filter(Q(label__icontains=word) | Q(name__icontains=word))
    return found.order_by("-size", "id")


def cluster_merge_candidates(cluster: Cluster, query: str, *, limit: int = MERGE_CANDIDATES) -> list[dict]:
    """The clusters that could merge into ``cluster`` (the same run and kind) whose name or label holds every word
    of ``query`` (any case), largest first, at most ``limit``: the clusters page's merge field asks as a lead types."""
    return [
        {"id": c.pk, "display_name": c.display_name, "size": c.size, "choice": merge_choice(c)}
        for c in _merge_candidates(cluster, query)[:limit]
    ]


def merge_choice(cluster: Cluster) -> str:
    """How the merge field names a cluster it offers: its id, then its name (``cluster_merge_target`` reads the id)."""
    return f"#{cluster.pk} {cluster.display_name}"


MERGE_CHOICE = re.compile(r"^#(\d{1,18})(?: |$)")


def cluster_merge_target(cluster: Cluster, text: str) -> Cluster:
    """The cluster a merge field names: ``#<id> …`` (a choice the field offered, ``merge_choice``), else the one other
    cluster of the same run and kind whose name or label holds every word typed (an exact name wins over names
    that only hold the words). Invalid, naming the problem, when none or several match."""
    text = " ".join((text or "").split())
    if not text:
        raise Invalid(gettext("merge_with: type the name of the cluster to merge into this one"), field="merge_with")
    chosen = MERGE_CHOICE.match(text)
    if chosen:
        other = _merge_candidates(cluster).filter(pk=int(chosen.group(1))).first()
        if other is None:
            raise Invalid(
                gettext("merge_with: cluster %(id)s is no other %(kind)s cluster of this clustering")
                % {"id": chosen.group(1), "kind": cluster.kind},
                field="merge_with",
            )
        return other
    matches = list(_merge_candidates(cluster, text)[: MERGE_CANDIDATES + 1])
    exact = [c for c in matches if c.display_name.lower() == text.lower()]
    if len(exact) == 1:
        return exact[0]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise Invalid(
            gettext("merge_with: no other %(kind)s cluster of this clustering is named like %(text)s")
            % {"kind": cluster.kind, "text": repr(text)},
            field="merge_with",
        )
    more = (
        gettext("more than %(count)s") % {"count": MERGE_CANDIDATES}
        if len(matches) > MERGE_CANDIDATES
        else str(len(matches))
    )
    raise Invalid(
        gettext(
            "merge_with: %(count)s %(kind)s clusters are named like %(text)s; type more of the name, or pick one "
            "from the list"
        )
        % {"count": more, "kind": cluster.kind, "text": repr(text)},
        field="merge_with",
    )


# --- judge alignment ------------------------------------------------------------------------------

ALL = "all"


def human_first_errors(project: Project) -> dict[int, dict]:
    """trace id -> the accepted human answer (adjudicated first, then the latest reviewed): tau (None: no error),
    category, round name."""
    rows = (
        Annotation.objects.filter(
            project=project, status=AnnotationStatus.ACCEPTED, verdict__in=[Verdict.ERROR, Verdict.NO_ERROR]
        )
        .order_by("trace_id", "-is_adjudicated", "-reviewed_at", "-id")
        .values_list("trace_id", "verdict", "tau", "error_category", "trace__round__name")
    )
    out: dict[int, dict] = {}
    for trace_id, verdict, tau, category, round_name in rows:
        if trace_id in out:
            continue
        error = verdict == Verdict.ERROR and tau
        out[trace_id] = {
            "tau": tau if error else None,
            "category": (category or "uncategorised") if error else "",
            "round": round_name or "no round",
        }
    return out


def _figures(pairs: list[tuple[int | None, int | None]]) -> dict:
    """Precision and recall of "first error at τ" over (predicted τ, human τ) pairs, exact and within one step."""
    predicted = sum(p is not None for p, _ in pairs)
    actual = sum(h is not None for _, h in pairs)
    exact = sum(p is not None and h is not None and p == h for p, h in pairs)
    near = sum(p is not None and h is not None and abs(p - h) <= 1 for p, h in pairs)

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {
        "traces": len(pairs),
        "predicted": predicted,
        "actual": actual,
        "exact_hits": exact,
        "near_hits": near,
        "precision_exact": ratio(exact, predicted),
        "recall_exact": ratio(exact, actual),
        "precision_near": ratio(near, predicted),
        "recall_near": ratio(near, actual),
    }


def judge_alignment(project: Project) -> list[dict]:
    """Per scorer that pre-scored the project (each succeeded pre-scoring job), its figures over the traces with
    an accepted human answer: over all of them, per round, and per human error category (a category's rows hold the
    traces whose human first error is of that category, so they give recall and the precision of τ on them)."""
    humans = human_first_errors(project)
    jobs = PrescoreJob.objects.filter(project=project, status="succeeded").order_by("created_at", "id")
    out = []
    for job in jobs:
        predictions = dict(
            TraceSuggestion.objects.filter(job=job, trace_id__in=list(humans)).values_list("trace_id", "suggested_tau")
        )
        pairs = [(trace_id, predictions.get(trace_id), human) for trace_id, human in humans.items()]
        groups: dict[tuple[str, str], list] = {("all", ALL): [(p, h["tau"]) for _, p, h in pairs]}
        for _, p, h in pairs:
            groups.setdefault(("round", h["round"]), []).append((p, h["tau"]))
            if h["category"]:
                groups.setdefault(("category", h["category"]), []).append((p, h["tau"]))
        label = job.scorer if not job.model_name else f"{job.scorer} · {job.model_name}"
        judged = judged_steps(job, humans)
        thresholds = threshold_table(judged)
        out.append(
            {
                "job": job.pk,
                "scorer": f"{label} (job {job.pk})",
                "rows": [{"by": by, "group": group, **_figures(v)} for (by, group), v in sorted(groups.items())],
                "calibration": calibration_bins(judged),
                "thresholds": thresholds,
                "best_threshold": best_threshold(thresholds),
                "threshold_advice": threshold_advice(thresholds),
            }
        )
    return out


# A step is judged against the human answer only up to the human first error: the steps before τ are right, τ is the
# first error, and an answer says nothing of the steps after it. Every step of a trace without error is right.
CALIBRATION_BINS = 10
THRESHOLDS = tuple(i / 10 for i in range(10))
# "Best" must catch at least this share of the human first errors: otherwise one lucky step read alone would win.
BEST_THRESHOLD_MIN_RECALL = 0.5


def judged_steps(job: PrescoreJob, humans: dict[int, dict]) -> list[tuple[float, bool]]:
    """(suspicion, is the human first error) for each step the job scored on a trace with an accepted answer, up to
    the human first error."""
    rows = StepSuggestion.objects.filter(job=job, step__trace_id__in=list(humans)).values_list(
        "step__trace_id", "step__index", "suspicion"
    )
    out = []
    for trace_id, index, suspicion in rows:
        tau = humans[trace_id]["tau"]
        if tau is not None and index > tau:
            continue
        out.append((min(max(float(suspicion), 0.0), 1.0), index == tau))
    return out


def calibration_bins(judged: list[tuple[float, bool]]) -> list[dict]:
    """Suspicion in tenths against the human verdict: per bin, the steps in it and how many were the first error."""
    bins: list[dict[str, Any]] = [
        {"low": i / CALIBRATION_BINS, "high": (i + 1) / CALIBRATION_BINS, "steps": 0, "first_errors": 0}
        for i in range(CALIBRATION_BINS)
    ]
    for suspicion, first in judged:
        row = bins[min(int(suspicion * CALIBRATION_BINS), CALIBRATION_BINS - 1)]
        row["steps"] += 1
        row["first_errors"] += first
    for row in bins:
        row["low"], row["high"] = round(row["low"], 2), round(row["high"], 2)
        row["rate"] = round(row["first_errors"] / row["steps"], 4) if row["steps"] else None
    return bins


def threshold_table(judged: list[tuple[float, bool]]) -> list[dict]:
    """For each threshold: reading every step whose suspicion is at or above it, what it costs and what it gains:
    the steps read (and those left unread), the human first errors among them (and those missed), the share of all
    first errors (recall) and first errors per hundred steps read."""
    total = sum(first for _, first in judged)
    rows = []
    for threshold in THRESHOLDS:
        read = [first for suspicion, first in judged if suspicion >= threshold]
        caught = sum(read)
        rows.append(
            {
                "threshold": threshold,
                "steps_read": len(read),
                "steps_not_read": len(judged) - len(read),
                "first_errors_caught": caught,
                "first_errors_missed": total - caught,
                "recall": round(caught / total, 4) if total else None,
                "per_hundred_steps": round(100 * caught / len(read), 2) if read else None,
            }
        )
    return rows


def best_threshold(rows: list[dict]) -> dict | None:
    """The threshold worth recommending, or None: among the thresholds that leave steps unread (one that reads every
    step is no advice: a lead reads every step without a scorer), catch at least ``BEST_THRESHOLD_MIN_RECALL`` of
    the first errors (so none that catches nothing) and find them more densely than reading every step does, the
    one that catches the most per hundred steps read; ties go to the lower threshold, which catches more."""
    every = max(rows, key=lambda r: r["steps_read"], default=None)
    if every is None or not every["steps_read"] or not every["first_errors_caught"]:
        return None
    eligible = [
        r
        for r in rows
        if r["steps_not_read"] > 0
        and r["first_errors_caught"] > 0
        and r["recall"] >= BEST_THRESHOLD_MIN_RECALL
        and r["per_hundred_steps"] > every["per_hundred_steps"]
    ]
    if not eligible:
        return None
    return max(eligible, key=lambda r: (r["per_hundred_steps"], -r["threshold"]))


def threshold_advice(rows: list[dict]) -> dict:
    """What the alignment page says about where to stop reading, from the same table: the recommended threshold
    (``best_threshold``) with its cost and gain against reading every step judged, or why there is none."""
    every = max(rows, key=lambda r: r["steps_read"], default=None)
    steps = every["steps_read"] if every else 0
    first_errors = every["first_errors_caught"] if every else 0
    advice: dict[str, Any] = {
        "steps": steps,
        "first_errors": first_errors,
        "every_step_per_hundred": every["per_hundred_steps"] if every else None,
        "threshold": None,
        "reason": "",
    }
    best = best_threshold(rows)
    if best is not None:
        advice.update(
            threshold=best["threshold"],
            steps_read=best["steps_read"],
            steps_not_read=best["steps_not_read"],
            first_errors_caught=best["first_errors_caught"],
            first_errors_missed=best["first_errors_missed"],
            per_hundred_steps=best["per_hundred_steps"],
        )
    elif not steps:
        advice["reason"] = "No step this job scored lies on a trace with an accepted answer: nothing to judge yet."
    elif not first_errors:
        advice["reason"] = (
            "No human first error lies among the steps this job scored: a threshold would have nothing to catch."
        )
    else:
        advice["reason"] = (
            f"No threshold leaves steps unread and still catches at least half of the {first_errors} human first "
            f"errors more densely than reading all {steps} steps ({advice['every_step_per_hundred']} per hundred): this "
            "scorer's suspicion is no guide to where to read yet, so no threshold is recommended."
        )
    return advice


def alignment_csv_rows(alignment: list[dict]) -> list[list]:
    keys = ["traces", "predicted", "actual", "exact_hits", "near_hits"]
    keys += ["precision_exact", "recall_exact", "precision_near", "recall_near"]
    rows: list[list] = [["scorer", "by", "group", *keys]]
    for scorer in alignment:
        for row in scorer["rows"]:
            rows.append([scorer["scorer"], row["by"], row["group"], *(row[k] for k in keys)])
    return rows
