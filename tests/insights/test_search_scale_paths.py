"""The paths search takes at scale, checked for what they answer on whichever database the run uses: the
suspicion facet read from the entry's own column (kept by migration 0009's triggers as step suggestions come and
go), a word of a script written without spaces found by its pairs of characters, facet counts in one pass, and a
deep page fetched by its ids."""

from __future__ import annotations

import pytest

from insights import search_text, selectors
from insights.models import SearchEntry
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import plant_corrections


@pytest.fixture
def corrections(db, project, annotator, lead, tmp_path):
    traces = make_traces(project, tmp_path, count=6, steps=3)
    return plant_corrections(project, traces, annotator=annotator, lead=lead, planted=set())


def _suspicion(annotation) -> float | None:
    return SearchEntry.objects.get(annotation=annotation).suspicion


def test_an_entry_keeps_the_latest_suspicion_of_its_step(corrections):
    from prescoring.models import PrescoreJob, StepSuggestion

    annotation = next(iter(corrections.values()))
    other = list(corrections.values())[1]
    entry = SearchEntry.objects.get(annotation=annotation)
    assert entry.suspicion is None
    first = PrescoreJob.objects.create(project=annotation.project, scorer="rules", status="succeeded")
    second = PrescoreJob.objects.create(project=annotation.project, scorer="rules", status="succeeded")
    older = StepSuggestion.objects.create(step_id=entry.step_id, job=first, scorer="rules", suspicion=0.2)
    assert _suspicion(annotation) == 0.2
    newer = StepSuggestion.objects.create(step_id=entry.step_id, job=second, scorer="rules", suspicion=0.9)
    assert _suspicion(annotation) == 0.9
    assert _suspicion(other) is None  # another step's entry is not touched
    StepSuggestion.objects.filter(pk=older.pk).update(suspicion=0.5)
    assert _suspicion(annotation) == 0.9  # the older scoring changed: still the newer one's
    StepSuggestion.objects.filter(pk=newer.pk).update(suspicion=0.4)
    assert _suspicion(annotation) == 0.4
    newer.delete()
    assert _suspicion(annotation) == 0.5
    # Moved to another step: both steps' entries follow.
    other_step = SearchEntry.objects.get(annotation=other).step_id
    StepSuggestion.objects.filter(pk=older.pk).update(step_id=other_step)
    assert _suspicion(annotation) is None and _suspicion(other) == 0.5
    # An entry written again (a save of its annotation) reads the latest scoring of its step itself.
    SearchEntry.objects.filter(annotation=other).update(suspicion=None)
    other.note = "looked again"
    other.save()
    assert _suspicion(other) == 0.5


def test_a_word_of_an_unspaced_script_is_found_by_its_pairs(corrections, project, lead, api_client):
    assert search_text.unspaced_bigrams("打开设置页面 ok 页面") == ["打开", "开设", "设置", "置页", "页面"]
    assert search_text.unspaced_bigrams("设") == [] and search_text.unspaced_bigrams("settings") == []
    chinese, spaced, other = list(corrections.values())[:3]
    chinese.note, spaced.note, other.note = "打开设置页面", "设 置", "置设"
    for annotation in (chinese, spaced, other):
        annotation.save()
    client = api_client(lead)

    def found(q: str) -> set[int]:
        body = client.get(f"/api/projects/{project.pk}/search/", {"q": q}).json()
        return {card["annotation_id"] for card in body["results"]}

    assert found("设置") == {chinese.pk}
    assert found("置页") == {chinese.pk}  # inside a run: a word of it, written without spaces
    assert found("设页") == set()  # both pairs' characters are there, never side by side


def test_facet_counts_in_one_pass_match_a_count_of_the_rows(corrections, project, lead):
    from collections import Counter

    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery())
    total, facets = selectors.facet_counts(entries, project)
    rows = list(entries.values("category", "status", "annotator_id"))
    assert total == len(rows) == len(corrections)
    assert {v["value"]: v["count"] for v in facets["category"]} == dict(Counter(r["category"] for r in rows))
    assert {v["value"]: v["count"] for v in facets["status"]} == dict(Counter(r["status"] for r in rows))
    assert facets["annotator"][0]["count"] == total and facets["annotator"][0]["label"]


def test_a_page_of_cards_is_the_same_page_of_the_search_order(corrections, project, lead):
    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery(q="the"))
    order = list(entries.values_list("annotation_id", flat=True))
    assert len(order) == len(corrections)
    pages = [selectors.step_cards(entries, limit=4, offset=offset) for offset in (0, 4)]
    assert [card["annotation_id"] for page in pages for card in page] == order
    assert pages[1][0]["instruction"] is not None and pages[1][0]["corrected_action"]


def test_a_page_in_the_older_half_is_read_from_the_oldest_end(corrections, project, lead):
    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery())
    order = list(entries.values_list("pk", flat=True))
    matches = len(order)
    assert matches == 6
    for offset in range(matches + 2):
        for limit in (1, 2, 4, 50):
            page = selectors.page_ids(entries, limit=limit, offset=offset, matches=matches)
            assert page == order[offset : offset + limit], (offset, limit)
    # From the oldest end indeed: told one match fewer than there are, the older half's pages shift by one.
    assert selectors.page_ids(entries, limit=2, offset=3, matches=matches - 1) == order[4:6]
    assert selectors.page_ids(entries, limit=2, offset=0, matches=matches - 1) == order[0:2]
    # Past the last match: empty, without a read.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as read:
        assert selectors.page_ids(entries, limit=50, offset=matches, matches=matches) == []
    assert len(read.captured_queries) == 0


def test_a_ranked_page_is_never_turned_round(corrections, project, lead):
    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery(q="the"))
    order = list(entries.values_list("pk", flat=True))
    # Ranked, the order is not newest first: told a wrong number of matches, a page is still its place in the order.
    assert selectors.page_ids(entries, limit=2, offset=4, matches=len(order) - 1) == order[4:6]


def test_past_the_most_the_facets_count_the_newest_matches_and_the_count_stays_exact(corrections, project, lead):
    from collections import Counter

    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery(q="the"))
    newest = list(entries.order_by("-annotation_id").values("category", "status"))
    every = selectors.search_counts(entries, project, most=len(newest))
    assert every.count == every.facets_of == len(newest) == 6
    assert {v["value"]: v["count"] for v in every.facets["status"]} == dict(Counter(r["status"] for r in newest))
    counts = selectors.search_counts(entries, project, most=2)
    assert counts.count == 6 and counts.facets_of == 2
    for facet in ("category", "status"):
        assert {v["value"]: v["count"] for v in counts.facets[facet]} == dict(Counter(r[facet] for r in newest[:2]))


def test_the_api_and_the_page_say_what_the_facet_counts_count(corrections, project, lead, api_client, monkeypatch):
    from django.test import Client

    from tests.conftest import TEST_PASSWORD

    body = api_client(lead).get(f"/api/projects/{project.pk}/search/").json()
    assert body["count"] == body["facets_of"] == 6
    page = Client()
    assert page.login(username=lead.username, password=TEST_PASSWORD)
    assert b'id="search-facets-of"' not in page.get(f"/projects/{project.pk}/search/").content
    monkeypatch.setattr(selectors, "FACETS_COUNTED_MAX", 4)
    body = api_client(lead).get(f"/api/projects/{project.pk}/search/").json()
    assert body["count"] == 6 and body["facets_of"] == 4
    assert sum(v["count"] for v in body["facets"]["status"]) == 4
    assert len(body["results"]) == 6  # every match is still found
    shown = page.get(f"/projects/{project.pk}/search/").content.decode()
    assert '<span id="search-facets-of">(the counts beside the filters are of the newest 4)</span>' in shown


def test_past_the_most_a_text_search_reads_its_count_and_page_at_once(corrections, project, lead, monkeypatch):
    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery(q="the"))
    newest = list(entries.order_by("-annotation_id").values_list("pk", flat=True))
    ranked = list(entries.values_list("pk", flat=True))
    assert ranked != newest  # the ranked order is another: a page of it is never the newest-first one
    # Past RANKED_MATCHES_MAX the page is newest first: the count's read gives it.
    monkeypatch.setattr(selectors, "RANKED_MATCHES_MAX", 1)
    for offset, limit in ((2, 2), (3, 2), (5, 4), (6, 2), (9, 2)):
        counts = selectors.search_counts(entries, project, most=2, page=(offset, limit))
        assert counts.count == 6 and counts.facets_of == 2, (offset, limit)
        assert counts.page_ids == newest[offset : offset + limit], (offset, limit)
    # A page among the newest ``most``: step_cards reads it from the newest end.
    assert selectors.search_counts(entries, project, most=2, page=(1, 2)).page_ids is None
    shown = selectors.step_cards(entries, limit=2, offset=0, ids=newest[2:4])
    assert [card["annotation_id"] for card in shown] == [
        SearchEntry.objects.get(pk=pk).annotation_id for pk in newest[2:4]
    ]
    # Every match counted (no more than ``most``), or a page that may be ranked: step_cards reads the page.
    assert selectors.search_counts(entries, project, most=7, page=(0, 2)).page_ids is None
    monkeypatch.setattr(selectors, "RANKED_MATCHES_MAX", 2)
    counts = selectors.search_counts(entries, project, most=2, page=(0, 2))
    assert counts.count == 6 and counts.page_ids is None


def test_which_terms_the_like_alone_finds_in_full():
    def term(q: str) -> search_text.Term:
        (group,) = search_text.query_groups(q)
        return group[0]

    for q in ("the", "Click,", "e2e", "500", "设置", "ひらがな"):
        assert selectors.index_matches_hold_the_text(term(q)), q
    # A phrase (punctuation may stand between its words in the index), a prefix, a word with case the two
    # lower-casings might not agree on: the index is asked too.
    for q in ('"search box"', "search-box", "pel*", "café", "naïve"):
        assert not selectors.index_matches_hold_the_text(term(q)), q


def _vendor() -> str:
    from django.db import connection

    return connection.vendor


def test_a_word_the_like_finds_in_full_is_not_asked_of_the_index(corrections, project, lead, monkeypatch):
    """The same matches, counts and pages with the index asked or not, partial words included; on PostgreSQL the
    query for one word reads no tsvector, a phrase's does."""
    chinese, partial, punctuated = list(corrections.values())[:3]
    chinese.note, partial.note, punctuated.note = "打开设置页面", "another bother", "search-box then"
    for annotation in (chinese, partial, punctuated):
        annotation.save()
    everyone = selectors.entries_for(lead, project)

    def found(q: str) -> tuple[list[int], int, list[int]]:
        entries = selectors.search(everyone, selectors.SearchQuery(q=q))
        count = selectors.search_counts(entries, project, most=2).count
        page = selectors.page_ids(selectors.in_page_order(entries, matches=count), limit=2, offset=1, matches=count)
        return list(entries.values_list("annotation_id", flat=True)), count, page

    queries = ("the", "other", "设置", "click", '"search box"', "search box", "box", "nothing")
    alone = {q: found(q) for q in queries}
    monkeypatch.setattr(selectors, "index_matches_hold_the_text", lambda term: False)
    assert {q: found(q) for q in queries} == alone
    assert partial.pk in alone["other"][0] and alone["the"][1] >= 1  # "another", "bother": by the LIKE
    assert alone["设置"][0] == [chinese.pk] and punctuated.pk in alone['"search box"'][0]
    assert alone["nothing"] == ([], 0, [])
    monkeypatch.undo()
    if _vendor() != "postgresql":
        return
    word = str(selectors.search(everyone, selectors.SearchQuery(q="the")).order_by().query)
    phrase = str(selectors.search(everyone, selectors.SearchQuery(q='"search box"')).order_by().query)
    assert "document_vector @@" not in word.split("WHERE", 1)[1]
    assert "document_vector @@" in phrase.split("WHERE", 1)[1]


def test_the_words_the_like_finds_in_full_are_one_lexeme_each_on_postgresql(db):
    """The rule's premise, asked of the database: the ``simple`` configuration makes each such word one lexeme, the
    word itself (a word it splits, such as one with an underscore, is no word of a query)."""
    if _vendor() != "postgresql":
        pytest.skip("PostgreSQL's full-text parser")
    from django.db import connection

    words = ["the", "e2e", "0x1f", "123abc", "1e5", "007", "k8s", "设置", "打开设置页面", "ひらがな", "カタカナ"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT w, phraseto_tsquery('simple', w)::text FROM unnest(%s::text[]) AS w", [words])
        lexemes = dict(cursor.fetchall())
        assert lexemes == {w: f"'{w}'" for w in words}
        cursor.execute("SELECT phraseto_tsquery('simple', 'x86_64')::text")
        assert cursor.fetchone()[0] == "'x86' <-> '64'"  # the control: a parse into two lexemes


def test_a_page_without_words_is_read_from_the_project_newest_index(corrections, project, lead):
    if _vendor() != "postgresql":
        pytest.skip("PostgreSQL's plans")
    from django.db import connection

    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery())
    page = entries.order_by("-annotation_id").values_list("pk", flat=True)[2:4]
    by_tau = entries.order_by("-tau").values_list("pk", flat=True)[2:4]
    with connection.cursor() as cursor:
        # A handful of rows, whose statistics depend on what ran before: the index's use is what is asked, so the
        # plans that would read the rows apart and sort them (a scan, a bitmap) are left out.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        plans = []
        for query in (page, by_tau):
            sql, params = query.query.sql_with_params()
            cursor.execute(f"EXPLAIN {sql}", params)
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    assert "Index Only Scan Backward using searchentry_project_newest" in plans[0]
    assert "searchentry_project_newest" not in plans[1] or "Index Only Scan" not in plans[1]
    assert list(page) == list(entries.values_list("pk", flat=True))[2:4]


def test_a_card_shows_its_rows_values(corrections, project, lead):
    """Cards are read as columns: each shows what its entry, annotation, trace, step, screenshot, round and annotator
    hold, a missing round as nothing."""
    from django.utils import timezone

    from traces.models import Round

    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery())
    without_round = SearchEntry.objects.filter(project=project).order_by("pk").first()
    round_ = Round.objects.create(project=project, name="week 9", checkpoint="agent-v9", ran_at=timezone.now())
    SearchEntry.objects.filter(project=project).exclude(pk=without_round.pk).update(round=round_)
    SearchEntry.objects.filter(pk=without_round.pk).update(round=None)
    cards = {card["annotation_id"]: card for card in selectors.step_cards(entries, limit=50)}
    assert len(cards) == len(corrections)
    for annotation in corrections.values():
        entry = SearchEntry.objects.select_related("step__screenshot", "trace", "annotator").get(annotation=annotation)
        card = cards[annotation.pk]
        shot = entry.step.screenshot
        assert shot is not None
        assert (card["screenshot"], card["width"], card["height"]) == (shot.sha256, shot.width, shot.height)
        assert (card["recorded_thought"], card["recorded_action"]) == (entry.step.thought, entry.step.action_text)
        assert (card["corrected_action"], card["note"]) == (annotation.corrected_action, annotation.note)
        assert (card["instruction"], card["annotator"]) == (entry.trace.instruction, entry.annotator.username)
        assert card["round"] == ("" if entry.pk == without_round.pk else "week 9")
        assert card["recorded_point"] is not None and card["corrected_point"] is not None


def test_every_facet_counted_in_pairs_is_a_count_of_the_rows(corrections, project, lead):
    """Facets counted two to a grouping set, the checkpoint from its rounds' counts: each facet's counts are those of
    the rows; two rounds of one checkpoint add up, an entry without a round counts for neither."""
    from collections import Counter

    from django.utils import timezone

    from traces.models import Round

    first, second, third = (
        Round.objects.create(project=project, name=f"week {i}", checkpoint=checkpoint, ran_at=timezone.now())
        for i, checkpoint in enumerate(("agent-v1", "agent-v1", "agent-v2"))
    )
    ids = list(SearchEntry.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    for pk, round_ in zip(ids, (first, second, third, third, None, first), strict=True):
        SearchEntry.objects.filter(pk=pk).update(round=round_, suspicion=0.8 if round_ is first else None)
    entries = selectors.search(selectors.entries_for(lead, project), selectors.SearchQuery())
    total, facets = selectors.facet_counts(entries, project)
    rows = list(entries.values(*selectors.FACETS.values()))
    assert total == len(rows) == 6
    for name, column in selectors.FACETS.items():
        expected = Counter(str(r[column]) for r in rows if r[column] not in (None, ""))
        assert {v["value"]: v["count"] for v in facets[name]} == dict(expected), name
    assert {v["value"]: v["count"] for v in facets["checkpoint"]} == {"agent-v1": 3, "agent-v2": 2}
    assert {v["value"]: v["count"] for v in facets["suspicion"]} == {"high": 2}
