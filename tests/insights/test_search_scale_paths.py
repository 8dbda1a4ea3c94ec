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
