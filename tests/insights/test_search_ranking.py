"""Full-text search over corrections, on whichever database the run uses (SQLite by default, PostgreSQL with
DATABASE_URL): best match first, phrases, fragments the full-text index has no word for, and input meant to break
the query (quotes, FTS5 operators, NUL bytes, long queries, odd Unicode) answered without a server error."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from insights.models import SearchEntry
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import plant_corrections

# What each correction's note says (the thought is the same for all, so only these differ).
NOTES = {
    # Made in this order so that newest first would be another order than best first.
    "in_instruction": "the menu was hidden",
    "once": "the pelican icon was hidden",
    "often": "pelican pelican pelican pelican: the pelican menu",
    "phrase": "submit then field",
    "phrase_across_comma": "submit, then field",
    "words_apart": "field then submit",
    "action": "typed with type(content='hello') too early",
    "cjk": "设置页面没有打开",
}


@pytest.fixture
def corrections(db, project, annotator, lead, tmp_path):
    """One accepted correction per note; the trace of ``in_instruction`` asks for the pelican in its instruction."""
    from traces.services import trace_instruction_set

    traces = make_traces(project, tmp_path, count=len(NOTES), steps=3)
    made = plant_corrections(project, traces, annotator=annotator, lead=lead, planted=set())
    by_name = {}
    for name, trace in zip(NOTES, traces, strict=True):
        annotation = made[trace.pk]
        annotation.corrected_thought = "look again"
        annotation.note = NOTES[name]
        annotation.save()
        by_name[name] = annotation
    trace_instruction_set(
        trace_id=by_name["in_instruction"].trace_id, actor=lead, instruction="Find the pelican settings"
    )
    return by_name


def _search(client, project, **params):
    response = client.get(f"/api/projects/{project.pk}/search/", params)
    assert response.status_code == 200, response.content[:500]
    return response.json()


def _found(client, project, q) -> list[int]:
    return [card["annotation_id"] for card in _search(client, project, q=q)["results"]]


def test_the_best_match_comes_first(corrections, project, lead, api_client):
    client = api_client(lead)
    ids = {name: a.pk for name, a in corrections.items()}
    # The correction weighs most (those whose correction says it come first), then how often the word occurs; a
    # trace whose instruction alone says it comes after them.
    assert _found(client, project, "pelican") == [ids["often"], ids["once"], ids["in_instruction"]]
    # A partial word has no word in the index to rank by: the LIKE finds it, newest first.
    partial = _found(client, project, "pelic")
    assert set(partial) == {ids["in_instruction"], ids["often"], ids["once"]}
    assert partial == sorted(partial, reverse=True)
    # Without q, newest first; facets still count what was found.
    everything = _search(client, project)
    assert [c["annotation_id"] for c in everything["results"]] == sorted(ids.values(), reverse=True)
    found = _search(client, project, q="pelican")
    assert found["count"] == 3 and sum(v["count"] for v in found["facets"]["annotator"]) == 3


def test_a_quoted_phrase_keeps_its_words_in_order(corrections, project, lead, api_client):
    client = api_client(lead)
    ids = {name: a.pk for name, a in corrections.items()}
    # Words in that order, punctuation between them or not (the full-text index); not the same words reordered.
    assert set(_found(client, project, '"submit then field"')) == {ids["phrase"], ids["phrase_across_comma"]}
    # The words alone, each anywhere.
    assert set(_found(client, project, "field submit")) == {
        ids["phrase"],
        ids["phrase_across_comma"],
        ids["words_apart"],
    }


def test_fragments_without_words_are_found_by_their_text(corrections, project, lead, api_client):
    client = api_client(lead)
    ids = {name: a.pk for name, a in corrections.items()}
    # Action syntax: the fragment as written, not any correction with the word "type" in it.
    assert _found(client, project, "type(content='hello')") == [ids["action"]]
    assert _found(client, project, "type(") == [ids["action"]]
    assert _found(client, project, "设置") == [ids["cjk"]]
    assert _found(client, project, "页面没有") == [ids["cjk"]]


HOSTILE = [
    '"',
    '""',
    '"""',
    "'",
    "\\",
    "%",
    "NEAR(pelican menu)",
    "pelican NEAR menu",
    "pelican AND NOT menu",
    "pelican OR menu",
    "pel*",
    "*",
    "^pelican",
    "head:pelican",
    "body:pelican",
    "-pelican",
    "+pelican",
    "{pelican}",
    "(",
    ")",
    "pelican\x00",
    "\x00",
    "\x00" * 200,
    "a" * 500,
    '"' * 500,
    ("pelican " * 63)[:500],
    "e\u0301\u200b\u202e\ufeff",
    "🦤🦤",
    "\u0000pelican\u0007menu",
    "::",
    "!!!",
    "&|<>",
    "'); DROP TABLE insights_searchentry; --",
]


def _holds(term, document: str, actions: str) -> bool:
    """What a term finds, said plainly (insights/search_text.py): a fragment as written in the words or the actions;
    words as text in the words, or in that order among the words' words (a prefix term: the last one may go on)."""
    from insights.search_text import WORD

    if not term.words:
        return term.text in document or term.text in actions
    if not term.prefix and term.phrase in document:
        return True
    words, n = WORD.findall(document), len(term.words)
    for i in range(len(words) - n + 1):
        *head, last = words[i : i + n]
        if tuple(head) == term.words[:-1] and (
            last.startswith(term.words[-1]) if term.prefix else last == term.words[-1]
        ):
            return True
    return False


def test_hostile_queries_are_answered(corrections, project, lead, api_client):
    from insights.selectors import search_query_parse

    client = api_client(lead)
    texts = {
        pk: (document, actions)
        for pk, document, actions in SearchEntry.objects.values_list("annotation_id", "document", "actions")
    }
    pelicans = {corrections[n].pk for n in ("once", "often", "in_instruction")}
    for q in HOSTILE:
        response = client.get(f"/api/projects/{project.pk}/search/", {"q": q})
        if "\x00" in q:  # refused at the door for every URL
            assert response.status_code == 400 and "NUL" in response.json()["detail"], q
            continue
        assert response.status_code == 200, (q, response.content[:500])
        found = {card["annotation_id"] for card in response.json()["results"]}
        # Each term is text or words to find, never the database's query syntax: what holds every group (any term
        # of a group), no more, no less.
        groups = search_query_parse({"q": q}).groups()
        expected = {pk for pk, (d, a) in texts.items() if all(any(_holds(t, d, a) for t in g) for g in groups)}
        assert found == expected, q
        if q.startswith("pelican pelican") or q in {"pel*", "^pelican", "-pelican", "+pelican"}:
            assert found == pelicans, f"{q}: punctuation splits words, a trailing * makes a prefix"
        if q in {"NEAR(pelican menu)", "head:pelican", "{pelican}"}:
            assert found == set(), f"{q}: a fragment of syntax is found as written, words in that order"
    menus = {corrections[n].pk for n in ("often", "in_instruction")}
    assert {c["annotation_id"] for c in _search(client, project, q="pelican OR menu")["results"]} == pelicans | menus
    assert SearchEntry.objects.count() == len(NOTES)


def test_hostile_input_elsewhere_is_refused_or_answered(corrections, project, lead, api_client):
    client = api_client(lead)
    # Too many terms: a 400 naming q.
    many = " ".join(f"w{i}" for i in range(40))
    response = client.get(f"/api/projects/{project.pk}/search/", {"q": many})
    assert response.status_code == 400 and "q" in response.json()["detail"]
    response = client.get(f"/api/projects/{project.pk}/search/", {"q": "x" * 501})
    assert response.status_code == 400
    # A NUL in a facet filter is refused by name, as in q.
    response = client.get(f"/api/projects/{project.pk}/search/", {"category": "wrong\x00"})
    assert response.status_code == 400 and "category" in response.json()["detail"]
    # A JSON body with a NUL or a lone surrogate is refused by name (studio.inputs), on both databases.
    for odd in ("pelican\x00", "pelican \ud800"):
        body = json.dumps({"name": "odd", "query": {"q": odd}})
        made = client.post(f"/api/projects/{project.pk}/slices/", body, content_type="application/json")
        assert made.status_code == 400 and "query" in made.json()["detail"], made.content[:500]
    # Other control characters are spaces between words.
    body = json.dumps({"name": "odd", "query": {"q": "\x01pelican\x1fmenu\x7f"}})
    made = client.post(f"/api/projects/{project.pk}/slices/", body, content_type="application/json")
    assert made.status_code == 201, made.content[:500]
    shown = client.get(f"/api/slices/{made.json()['id']}/")
    assert shown.status_code == 200, shown.content[:500]
    assert sum(point["count"] for point in shown.json()["trend"]) == 2


def test_the_index_follows_edits_and_deletes(corrections, project, lead, api_client):
    client = api_client(lead)
    annotation = corrections["phrase_across_comma"]
    assert annotation.pk in _found(client, project, '"submit then field"')
    # The comma is what only the full-text index sees past: a stale index row would still match.
    annotation.note = "nothing to see"
    annotation.save()
    assert annotation.pk not in _found(client, project, '"submit then field"')
    annotation.note = "submit; then field"
    annotation.save()
    assert annotation.pk in _found(client, project, '"submit then field"')
    SearchEntry.objects.filter(annotation=annotation).delete()
    assert annotation.pk not in _found(client, project, '"submit then field"')
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM insights_searchentry_fts WHERE insights_searchentry_fts MATCH 'submit'"
            )
            assert cursor.fetchone()[0] == SearchEntry.objects.filter(document__contains="submit").count()


@pytest.mark.django_db(transaction=True)
def test_the_migration_indexes_the_entries_already_there(project, annotator, lead, api_client, tmp_path):
    from django.core.management import call_command

    traces = make_traces(project, tmp_path, count=2, steps=3)
    made = plant_corrections(project, traces, annotator=annotator, lead=lead, planted=set())
    first = made[traces[0].pk]
    first.note = "submit, then field"
    first.save()
    call_command("migrate", "insights", "0004", verbosity=0)
    try:
        # Without the index only the LIKE runs: the phrase across the comma is not found.
        entries = SearchEntry.objects.filter(document__contains="submit then field")
        assert not entries.exists()
    finally:
        call_command("migrate", "insights", verbosity=0)
    assert _found(api_client(lead), project, '"submit then field"') == [first.pk]


def test_facets_past_one_read_count_the_same(corrections, project, lead, monkeypatch):
    from insights import selectors

    entries = selectors.search(selectors.entries_for(lead, project), selectors.search_query_parse({"q": "the"}))
    read = selectors.facet_counts(entries, project)
    monkeypatch.setattr(selectors, "FACETS_IN_ONE_READ", 2)
    grouped = selectors.facet_counts(entries, project)
    assert read[0] > 2 and grouped == read
