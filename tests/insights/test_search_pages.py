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
