"""One error model (issue 16 item 2): studio.errors kinds, one kind→status table, one body shape."""

from __future__ import annotations

import pathlib

import pytest
from rest_framework.exceptions import ValidationError
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from annotation.review import ReviewConflict, ReviewError
from studio.errors import STATUS_BY_KIND, Conflict, ErrorKind, Forbidden, Invalid, NotFound, StudioError, error_body

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_every_kind_has_one_status():
    assert set(STATUS_BY_KIND) == set(ErrorKind)
    assert [cls("x").status for cls in (Invalid, Forbidden, NotFound, Conflict)] == [400, 403, 404, 409]


def test_error_body_carries_detail_kind_and_extra_fields():
    body = error_body(Conflict("The annotation changed since you opened it.", current=7))
    assert body == {"detail": "The annotation changed since you opened it.", "kind": "conflict", "current": 7}


def test_review_error_is_an_invalid_kind_and_still_a_value_error():
    exc = ReviewError("Choose a verdict.")
    assert isinstance(exc, Invalid) and isinstance(exc, ValueError) and exc.status == 400


def _view_raising(exc: Exception):
    class Raising(APIView):
        authentication_classes: list = []
        permission_classes: list = []

        def get(self, request):
            raise exc

    return Raising.as_view()


@pytest.mark.parametrize(
    ("exc", "status"),
    [(Invalid("bad"), 400), (Forbidden("no"), 403), (NotFound("gone"), 404), (Conflict("stale", current=3), 409)],
)
def test_the_api_answers_each_kind_with_its_status_and_body(exc: StudioError, status: int):
    response = _view_raising(exc)(APIRequestFactory().get("/"))
    assert response.status_code == status
    assert response.data == error_body(exc)


def test_drf_errors_still_answer_as_before():
    response = _view_raising(ValidationError({"tau": ["Out of range."]}))(APIRequestFactory().get("/"))
    assert response.status_code == 400 and response.data == {"tau": ["Out of range."]}


def test_no_service_or_selector_module_speaks_http():
    offenders, scanned = [], 0
    for path in sorted(REPO.glob("*/**/*.py")):
        if ".venv" in path.parts or path.name not in {"services.py", "selectors.py"}:
            continue
        scanned += 1
        text = path.read_text()
        if "rest_framework" in text or "HttpResponse" in text or "status=4" in text:
            offenders.append(str(path.relative_to(REPO)))
    assert scanned >= 4 and offenders == []


def test_a_stale_review_version_is_a_conflict_like_the_workspace():
    exc = ReviewConflict("annotation 1 changed since you opened it", current_version=4)
    assert exc.status == 409 and error_body(exc)["current_version"] == 4
