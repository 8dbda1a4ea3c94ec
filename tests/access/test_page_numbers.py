"""Page numbers, one rule for every paged endpoint (studio.inputs.page_number): a page is a whole number from 1 up to
the last one whose first row a database can skip to (OFFSET is a 64-bit integer on PostgreSQL and SQLite); anything
else is a 400 naming ``page``, on both databases, never a 500."""

from __future__ import annotations

import pytest

from studio.errors import Invalid
from studio.inputs import ROW_OFFSET_MAX, page_number

pytestmark = pytest.mark.django_db

REFUSED = ["0", "-1", "abc", "1.5", "²", "1" * 30, "1000000000000000000", str(ROW_OFFSET_MAX)]


def test_the_rule():
    assert page_number(None, page_size=50) == 1
    assert page_number("", page_size=50) == 1
    assert page_number("7", page_size=50) == 7
    last = ROW_OFFSET_MAX // 50 + 1  # its first row, (last - 1) * 50, is the last a database can skip to
    assert page_number(str(last), page_size=50) == last
    for raw in [*REFUSED, str(last + 1)]:
        with pytest.raises(Invalid) as refused:
            page_number(raw, page_size=50)
        assert refused.value.detail.startswith("page ")


def test_the_search_api_refuses_what_no_database_can_skip_to(project, annotator, api_client):
    client = api_client(annotator)  # any member
    for raw in REFUSED:
        response = client.get(f"/api/projects/{project.pk}/search/", {"page": raw})
        assert response.status_code == 400, (raw, response.content[:300])
        assert response.json()["detail"].startswith("page "), raw
    far = client.get(f"/api/projects/{project.pk}/search/", {"page": str(ROW_OFFSET_MAX // 50 + 1)})
    assert far.status_code == 200 and far.json()["results"] == []


def test_the_paged_lists_refuse_them_alike(project, lead, api_client):
    client = api_client(lead)
    for url in ("/api/projects/", f"/api/projects/{project.pk}/traces/"):
        for raw in REFUSED:
            response = client.get(url, {"page": raw})
            assert response.status_code == 400, (url, raw, response.content[:300])
            assert response.json()["detail"].startswith("page "), (url, raw)
        assert client.get(url, {"page": "1"}).status_code == 200
        # A page past the last one is still "no such page".
        assert client.get(url, {"page": "99"}).status_code == 404
