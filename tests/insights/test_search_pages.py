"""The search's pages outside a project: the navigation links to the search for everyone who may search, and its
page sends a chosen project and words to that project's search page; a project not theirs is "no such"."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.conftest import TEST_PASSWORD

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=TEST_PASSWORD)
    return client


def test_the_navigation_links_to_the_search_for_each_role(project, annotator, lead, engineer):
    for user in (annotator, lead, engineer):
        projects = _client(user).get("/projects/")
        assert projects.status_code == 200
        link = re.search(
            rb'<nav class="mainnav"[^>]*>.*?<a href="([^"]+)" id="nav-search">Search</a>', projects.content, re.S
        )
        assert link, user.username
        home = _client(user).get(link.group(1).decode())
        assert home.status_code == 200
        assert f'<option value="{project.pk}">{project.name}</option>'.encode() in home.content
        assert f'href="/projects/{project.pk}/search/"'.encode() in home.content


def test_the_chosen_project_and_words_open_its_search(project, annotator, make_user):
    from traces.services import project_create

    client = _client(annotator)
    chosen = client.get("/search/", {"project": project.pk, "q": "search-box", "category": ""})
    assert chosen.status_code == 302
    assert chosen["Location"] == f"/projects/{project.pk}/search/?q=search-box"
    assert client.get(chosen["Location"]).status_code == 200
    other = project_create(name="Not theirs", members=[make_user("someone")])
    assert b"Not theirs" not in client.get("/search/").content
    for refused in (str(other.pk), "abc", "99999"):
        assert client.get("/search/", {"project": refused}).status_code == 404, refused


def test_every_value_the_studio_writes_into_a_facet_has_words_in_each_language():
    """The buckets insights.signature writes, the agreement, the suspicion, the verdicts and states: each shown in the
    reader's words on the filters and cards; a value of the project's own (a category) is shown as it is."""
    from django.utils import translation

    from annotation.models import AnnotationStatus, Verdict
    from insights import selectors, signature
    from insights.services import AGREES, DIFFERS

    written = {
        "displacement": {name for _, name in signature.DISPLACEMENT_BUCKETS} | {signature.FAR, signature.NO_POINT},
        "direction": {"right", "left", "up", "down"},
        "position": {name for _, name in signature.POSITION_BUCKETS} | {signature.LATE},
        "recorded_type": {signature.UNPARSED},
        "agreement": {AGREES, DIFFERS},
        "suspicion": {name for _, name in selectors.SUSPICION_BUCKETS},
        "verdict": {value for value in Verdict.values if value},
        "status": set(AnnotationStatus.values),
    }
    for facet, values in written.items():
        assert values <= selectors.FACET_VALUE_WORDS[facet].keys(), facet
    with translation.override("zh-hans"):
        assert selectors.facet_value_words("direction", "right") == "向右"
        assert selectors.facet_value_words("displacement", "over 30%") == "超过 30%"
        assert selectors.facet_value_words("status", "accepted") == "已通过"
        assert selectors.facet_value_words("category", "wrong element") == "wrong element"
    assert selectors.facet_value_words("direction", "right") == "right"
