"""What a search term finds, on whichever database the run uses (SQLite by default, PostgreSQL with DATABASE_URL):
actions as people write them (no box tokens) and no syntax taken for words, punctuation splitting words as in the
indexed text, ``OR`` and ``*``, corrections ranked before the instructions that mention the words, the
recorded-action facet's ``unparsed``, the existing index rebuilt by its migration, and one CSV for the page and
the API."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from insights.models import SearchEntry
from tests.factories import make_trace

BOX = "click(start_box='<|box_start|>({x},{y})<|box_end|>')"
# name: (instruction, recorded action at τ, corrected thought, corrected action, note)
CORRECTIONS = {
    "tokens": ("Open the settings", BOX.format(x=100, y=100), "the button lies lower", BOX.format(x=500, y=300), ""),
    "drag": (
        "Sort the files",
        "drag(start_box='<|box_start|>(10,10)<|box_end|>', end_box='<|box_start|>(90,90)<|box_end|>')",
        "drag less far",
        "drag(start_box='<|box_start|>(10,10)<|box_end|>', end_box='<|box_start|>(20,20)<|box_end|>')",
        "",
    ),
    "search_box": ("Find a hotel", BOX.format(x=1, y=1), "click the search box first", BOX.format(x=40, y=60), ""),
    "hyphen": ("Read the news", "wait()", "wait for the page", "wait()", "the search-box was hidden"),
    "instruction": (
        "Search box: type the city into the search box, then press search",
        BOX.format(x=2, y=2),
        "the field was wrong",
        BOX.format(x=7, y=7),
        "",
    ),
    "unparsed": ("Buy a cap", "click text (Search)", "click the field, not its label", BOX.format(x=50, y=50), ""),
}


@pytest.fixture
def corrections(db, project, annotator, lead):
    from annotation.models import Annotation, AnnotationStatus, Verdict

    made = {}
    for name, (instruction, recorded, thought, action, note) in CORRECTIONS.items():
        trace = make_trace(
            project, through="rows", external_id=name, instruction=instruction, steps=2, actions=[recorded, "wait()"]
        )
        now = timezone.now()
        made[name] = Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=annotator,
            status=AnnotationStatus.ACCEPTED,
            verdict=Verdict.ERROR,
            tau=1,
            error_category="wrong element / grounding",
            corrected_thought=thought,
            corrected_action=action,
            note=note,
            submitted_at=now,
            reviewed_at=now,
            reviewed_by=lead,
        ).pk
    return made


def _search(client, project, **params):
    response = client.get(f"/api/projects/{project.pk}/search/", params)
    assert response.status_code == 200, response.content[:500]
    return response.json()


def _found(client, project, q: str) -> list[int]:
    return [card["annotation_id"] for card in _search(client, project, q=q)["results"]]


def _names(corrections, ids) -> set[str]:
    return {name for name, pk in corrections.items() if pk in set(ids)}


def _assert_actions_as_written(client, project, corrections):
    # Action syntax as people write it (the plain form), though the corrections are stored with box tokens.
    assert _names(corrections, _found(client, project, "start_box='(500")) == {"tokens"}
    assert _names(corrections, _found(client, project, "click(start_box='(40,60)')")) == {"search_box"}
    assert _names(corrections, _found(client, project, "end_box='(20,20)'")) == {"drag"}
    # The syntax's tokens and argument names are no words: these find what people wrote, not every click.
    assert _names(corrections, _found(client, project, "box")) == {"search_box", "hyphen", "instruction"}
    assert _found(client, project, "start") == [] and _found(client, project, "end") == []
    assert _found(client, project, "box_start") == []


def test_actions_are_found_as_written_and_their_syntax_is_no_words(corrections, project, lead, api_client):
    _assert_actions_as_written(api_client(lead), project, corrections)
    entry = SearchEntry.objects.get(annotation_id=corrections["tokens"])
    assert "click(start_box='(500,300)')" in entry.actions and "<|box_start|>" not in entry.actions + entry.document


def test_the_existing_index_is_rebuilt_by_its_migration(corrections, project, lead, api_client):
    # Entries as the index held them before: the actions in the document as stored, with their box tokens.
    for entry in SearchEntry.objects.select_related("annotation", "step", "trace"):
        old = [entry.trace.instruction, entry.step.thought, entry.step.action_text]
        old += [entry.annotation.corrected_thought, entry.annotation.corrected_action, entry.annotation.note]
        SearchEntry.objects.filter(pk=entry.pk).update(
            document="\n".join(p for p in old if p).lower(), correction="", actions="", recorded_type=""
        )
    client = api_client(lead)
    assert len(_found(client, project, "box")) == len(CORRECTIONS)  # the control: the old index's answer
    migration = importlib.import_module("insights.migrations.0007_search_words_and_actions")
    migration.texts_rewrite(apps, SimpleNamespace(connection=connection))
    _assert_actions_as_written(client, project, corrections)
    assert SearchEntry.objects.get(annotation_id=corrections["unparsed"]).recorded_type == "unparsed"


def test_punctuation_splits_words_as_in_the_indexed_text(corrections, project, lead, api_client):
    client = api_client(lead)
    field = _found(client, project, "click field")
    assert _names(corrections, field) == {"unparsed", "instruction"}  # "click" the recorded action's type there
    assert _found(client, project, "click, field") == field
    assert _found(client, project, "click; field.") == field
    assert _names(corrections, _found(client, project, "search-box")) == {"search_box", "hyphen", "instruction"}
    assert _found(client, project, '"search-box"') == _found(client, project, "search-box")


def test_corrections_that_say_the_words_come_before_instructions_that_do(corrections, project, lead, api_client):
    client = api_client(lead)
    for q in ("search box", "search-box", '"search box"'):
        found = _found(client, project, q)
        # The instruction says "search box" twice and "search" once more, the corrections once each: they come
        # first all the same.
        assert _names(corrections, found[:2]) == {"search_box", "hyphen"}, q
        assert found[2] == corrections["instruction"], q


def test_or_and_a_prefix(corrections, project, lead, api_client):
    client = api_client(lead)
    assert _names(corrections, _found(client, project, "hotel OR city")) == {"search_box", "instruction"}
    assert _names(corrections, _found(client, project, "hotel OR city box")) == {"search_box", "instruction"}
    assert _names(corrections, _found(client, project, "hotel OR news OR files drag")) == {"drag"}
    # A trailing * matches words that begin so (not the same letters inside a word: "ear" is in "search").
    assert _names(corrections, _found(client, project, "sea*")) == {"search_box", "hyphen", "instruction", "unparsed"}
    assert _found(client, project, "ear*") == []
    assert _names(corrections, _found(client, project, "ear")) == {"search_box", "hyphen", "instruction", "unparsed"}
    # Quoted, OR and * are text: a phrase of three words, and the word "sea" (its text found inside words too).
    assert _found(client, project, '"hotel OR city"') == []
    assert _found(client, project, '"sea*"') == _found(client, project, "sea")
    assert _found(client, project, "OR") == _found(client, project, "or")  # joining nothing, it is the word


def test_a_recorded_action_that_does_not_parse_is_a_facet_value(corrections, project, lead, api_client):
    facets = _search(api_client(lead), project)["facets"]
    recorded = {v["value"]: v["count"] for v in facets["recorded_type"]}
    assert recorded == {"click": 3, "drag": 1, "wait": 1, "unparsed": 1}
    only = _search(api_client(lead), project, recorded_type="unparsed")
    assert [c["annotation_id"] for c in only["results"]] == [corrections["unparsed"]]


def test_the_api_and_the_page_give_one_csv(corrections, project, lead, api_client):
    from django.test import Client

    from tests.conftest import TEST_PASSWORD

    params = {"q": "search box", "recorded_type": "click"}
    api = api_client(lead).get(f"/api/projects/{project.pk}/search/", {**params, "format": "csv"})
    assert api.status_code == 200, api.content[:300]
    assert api["Content-Type"].startswith("text/csv")
    page = Client()
    assert page.login(username=lead.username, password=TEST_PASSWORD)
    csv = page.get(f"/projects/{project.pk}/search.csv", params)
    assert csv.status_code == 200
    assert api.content == csv.content and api["Content-Disposition"] == csv["Content-Disposition"]
    rows = csv.content.decode().splitlines()
    assert rows[0].startswith("annotation_id,") and len(rows) == 3  # the header, search_box and instruction
    assert rows[1].startswith(f"{corrections['search_box']},")
