"""One error model: studio.errors kinds, one kind→status table, one body shape, answered the
same by the API, the pages and the sockets; a bug is a 500, never a 400."""

from __future__ import annotations

import logging
import pathlib
import re

import pytest
from django.test import Client
from django.urls import include
from django.urls import path as url_path
from django.utils import timezone
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from annotation.models import Annotation, AnnotationStatus
from annotation.review.api import LeadView
from annotation.review.services import ReviewConflict, ReviewError
from studio.errors import (
    STATUS_BY_KIND,
    Conflict,
    ErrorKind,
    Forbidden,
    Invalid,
    NotFound,
    StudioError,
    TooLarge,
    error_body,
    error_frame,
)
from tests.answers import error_json
from traces.models import Step, Trace

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def test_every_kind_has_one_status():
    assert set(STATUS_BY_KIND) == set(ErrorKind)
    assert [cls("x").status for cls in (Invalid, Forbidden, NotFound, Conflict, TooLarge)] == [400, 403, 404, 409, 413]


def test_error_body_carries_detail_kind_and_extra_fields():
    body = error_body(Conflict("The annotation changed since you opened it.", current=7))
    assert body == {"detail": "The annotation changed since you opened it.", "kind": "conflict", "current": 7}


def test_review_error_is_an_invalid_kind_and_no_value_error():
    """A refusal is caught by its kind: an ``except ValueError`` meant for a parse must not swallow it."""
    exc = ReviewError("Choose a verdict.")
    assert isinstance(exc, Invalid) and not isinstance(exc, ValueError) and exc.status == 400


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


# What a module speaking HTTP shows: DRF, Django's HTTP module or answers, or a status number / constant.
HTTP_SPEECH = re.compile(
    r"rest_framework|django\.http|HttpResponse|JsonResponse|Http404|PermissionDenied|status\.HTTP_|status=[45]\d\d"
    r"|\bstatus\s*=\s*[45]\d\d\b"
)


def _service_and_selector_modules() -> list[pathlib.Path]:
    """Every services / selectors module (``services.py``, ``selectors.py``, a ``services/`` package)."""
    found = []
    # The studio's own packages only: the data folder under the repository (var/) is other test processes'
    # scratch space, made and removed while this walks, and the virtualenv is not ours.
    packages = [top for top in REPO.iterdir() if (top / "__init__.py").exists() and top.name != "tests"]
    for path in sorted(p for top in packages for p in top.rglob("*.py")):
        in_package = {"services", "selectors"} & set(path.parent.relative_to(REPO).parts)
        if path.stem.endswith(("services", "selectors")) or in_package:
            found.append(path)
    return found


def test_no_service_or_selector_module_speaks_http():
    modules = _service_and_selector_modules()
    offenders = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path in modules
        for match in [HTTP_SPEECH.search(path.read_text())]
        if match
    ]
    names = {path.relative_to(REPO).as_posix() for path in modules}
    assert {
        "annotation/services/drafts.py",
        "annotation/services/leases.py",
        "annotation/services/transitions.py",
        "annotation/selectors.py",
        "annotation/review/services.py",
        "exports/services/export_jobs.py",
        "traces/services/import_shards.py",
    } <= names
    assert len(modules) >= 8 and offenders == []


def test_the_http_speech_pattern_catches_what_it_should():
    # The grep above must be able to fail: each of these lines would be an offence in a service.
    for line in (
        "from rest_framework.exceptions import ValidationError",
        "from django.http import Http404",
        "return Response(body, status=409)",
        "status = 400",
        "raise PermissionDenied('no')",
        "status=status.HTTP_409_CONFLICT",
    ):
        assert HTTP_SPEECH.search(line), line
    assert not HTTP_SPEECH.search("annotation.status = AnnotationStatus.DRAFT; from_status=from_status")


# An error status named in an API module: a refusal raised as a kind says its status in one table instead.
HAND_NAMED_ERROR = re.compile(r"status\.HTTP_4\d\d|status=[45]\d\d|HTTP_409")


def _api_modules() -> list[pathlib.Path]:
    return sorted(
        path
        for top in REPO.iterdir()
        if (top / "__init__.py").exists() and top.name != "tests"
        for path in top.rglob("api*.py")
    )


def test_no_api_module_names_an_error_status_by_hand():
    modules = _api_modules()
    assert {"studio/api.py", "exports/api.py", "traces/api.py"} <= {p.relative_to(REPO).as_posix() for p in modules}
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in modules
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if HAND_NAMED_ERROR.search(line)
    ]
    assert offenders == [], "raise a studio.errors kind (Conflict, Invalid, ...) instead:\n" + "\n".join(offenders)


def test_control_a_hand_named_error_status_is_seen():
    for line in (
        "status=status.HTTP_200_OK if changed else status.HTTP_409_CONFLICT,",
        "return Response(b, status=409)",
    ):
        assert HAND_NAMED_ERROR.search(line), line
    assert not HAND_NAMED_ERROR.search("return Response(data, status=status.HTTP_202_ACCEPTED)")
    assert not HAND_NAMED_ERROR.search("409: OpenApiResponse(description='not finished'),")


def test_every_refusal_type_of_the_apps_is_a_kind():
    """The app exceptions that refuse a request are studio.errors kinds (none carries its own HTTP status)."""
    from annotation.answer_fields import FieldProblem
    from annotation.services import LeaseLost, NotEditable, StaleVersion, SubmitRejected
    from annotation.workflow import TransitionError
    from exports.builders import OptionsError
    from exports.services import ExportError
    from prescoring.services import PrescoreError
    from studio.access import AccessRefused, NotInScope
    from studio.services import UserProblem
    from traces.services import ProjectRefused, TraceDeleteRefused, TraceEditRefused, UploadTooLarge
    from webhooks.services import WebhookRefused

    kinds = {
        StaleVersion: Conflict,
        NotEditable: Conflict,
        LeaseLost: Conflict,
        TransitionError: Conflict,
        ReviewConflict: Conflict,
        SubmitRejected: Invalid,
        FieldProblem: Invalid,
        ReviewError: Invalid,
        OptionsError: Invalid,
        ExportError: Invalid,
        PrescoreError: Invalid,
        ProjectRefused: Invalid,
        TraceDeleteRefused: Invalid,
        TraceEditRefused: Invalid,
        WebhookRefused: Invalid,
        UserProblem: Invalid,
        UploadTooLarge: TooLarge,
        AccessRefused: Forbidden,
        NotInScope: NotFound,
    }
    wrong = {cls.__name__: kind.__name__ for cls, kind in kinds.items() if not issubclass(cls, kind)}
    assert wrong == {}
    carrying_status = [cls.__name__ for cls in kinds if "status" in vars(cls) or "http_status" in vars(cls)]
    assert carrying_status == []


def test_a_stale_review_version_is_a_conflict_like_the_workspace():
    exc = ReviewConflict("annotation 1 changed since you opened it", current_version=4)
    assert exc.status == 409 and error_body(exc)["current_version"] == 4


def test_the_socket_frame_is_the_api_body_with_a_type():
    exc = Conflict("stale", current_version=2)
    assert error_frame(exc) == {"type": "error", **error_body(exc)}
    assert error_frame(NotFound("No such lease among yours."))["kind"] == "not_found"


# --- the same refusal on every surface -------------------------------------------------------------------------


def _trace(project, external_id: str) -> Trace:
    trace = Trace.objects.create(project=project, external_id=external_id, instruction="Open settings", step_count=2)
    Step.objects.bulk_create(
        [Step(trace=trace, index=i, thought="t", action_text="click(start_box='(1,1)')") for i in (1, 2)]
    )
    return trace


@pytest.mark.django_db
def test_a_stale_version_is_409_with_current_version_on_the_workspace_api_the_review_api_and_the_review_page(
    project, annotator, lead, api_client
):
    draft = Annotation.objects.create(
        trace=_trace(project, "draft"), project=project, annotator=annotator, version=3, note="seen"
    )
    workspace = api_client(annotator).put(
        f"/api/annotations/{draft.pk}/draft/", {"version": 1, "note": "an older edit"}, format="json"
    )
    submitted = Annotation.objects.create(
        trace=_trace(project, "submitted"),
        project=project,
        annotator=annotator,
        status=AnnotationStatus.SUBMITTED,
        submitted_at=timezone.now(),
        verdict="no_error",
        version=4,
    )
    review_api = api_client(lead).post(
        f"/api/reviews/{submitted.pk}/accept/", {"version": 2, "comment": ""}, format="json"
    )
    page_client = Client()
    page_client.force_login(lead)
    review_page = page_client.post(f"/reviews/{submitted.pk}/decide/", {"decision": "accept", "version": "2"})

    assert (workspace.status_code, review_api.status_code, review_page.status_code) == (409, 409, 409)
    assert (workspace.json()["kind"], review_api.json()["kind"]) == ("conflict", "conflict")
    assert (workspace.json()["current_version"], review_api.json()["current_version"]) == (3, 4)
    assert workspace.json()["current"]["note"] == "seen"  # the workspace still gets the newer annotation itself
    assert review_api.json()["detail"] in review_page.content.decode()  # the page says the same words
    submitted.refresh_from_db()
    draft.refresh_from_db()
    assert (submitted.status, draft.note) == (AnnotationStatus.SUBMITTED, "seen")  # nothing was overwritten


@pytest.mark.django_db
def test_a_refused_page_shows_the_access_layers_words_with_the_kinds_status(project, annotator):
    from studio.access import refusal

    client = Client()
    client.force_login(annotator)
    forbidden = client.get(f"/projects/{project.pk}/dashboard/")
    missing = client.get("/traces/999999/")
    assert forbidden.status_code == 403 and refusal("dashboard.view") in forbidden.content.decode()
    assert 'data-kind="forbidden"' in forbidden.content.decode()
    assert missing.status_code == 404 and "No such trace among yours." in missing.content.decode()
    # The same refusal asked for as JSON is the API's body.
    as_json = client.get(f"/projects/{project.pk}/dashboard/", HTTP_ACCEPT="application/json")
    assert as_json.status_code == 403
    assert error_json(as_json) == {"detail": refusal("dashboard.view"), "kind": "forbidden"}


@pytest.mark.django_db
def test_a_refusal_inside_a_page_keeps_the_page_and_answers_the_kinds_status(project, lead):
    trace = _trace(project, "keep")
    client = Client()
    client.force_login(lead)
    refused = client.post(f"/traces/{trace.pk}/delete/", {"reason": "   "})
    assert refused.status_code == 400 and "say why the trace is deleted" in refused.content.decode()
    assert Trace.objects.filter(pk=trace.pk).exists()


# --- a bug is a 500 with a log, not a 400 ------------------------------------------------------------------------


class BuggyLeadView(LeadView):
    """A lead API view with a bug in it: LeadView used to turn any ValueError into a 400."""

    permission_action = "annotation.review"

    def get(self, request):
        return Response({"n": int("not a number")})


def buggy_page(request):
    raise ValueError("a bug in a page")


urlpatterns = [
    url_path("api/buggy/", BuggyLeadView.as_view()),
    url_path("buggy/", buggy_page),
    url_path("", include("studio.urls")),
]
handler500 = "studio.views.server_error"


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_a_bare_value_error_in_a_view_is_a_500_and_logged(lead, caplog):
    client = Client(raise_request_exception=False)
    client.force_login(lead)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        api = client.get("/api/buggy/")
        page = client.get("/buggy/")
    assert (api.status_code, page.status_code) == (500, 500)
    assert error_json(api) == {"detail": "The server failed on this request; the error was logged."}
    assert page["X-Request-ID"] in page.content.decode()  # the page names its request too
    assert "invalid literal" not in api.content.decode() + page.content.decode()  # logged, never sent
    logged = [r for r in caplog.records if r.name == "django.request" and r.exc_info]
    assert {type(r.exc_info[1]) for r in logged} == {ValueError} and len(logged) == 2


@pytest.mark.django_db
def test_framework_level_refusals_of_the_api_have_the_same_body(project, engineer, api_client):
    from exports.models import ExportJob

    queued = ExportJob.objects.create(project=project, format="trl", created_by=engineer)
    unfinished = api_client(engineer).get(f"/api/exports/{queued.pk}/bundle")
    nowhere = Client()
    nowhere.force_login(engineer)
    no_route = nowhere.get("/api/no-such-endpoint/")
    assert unfinished.status_code == 409 and unfinished.json()["kind"] == "conflict"
    assert no_route.status_code == 404 and error_json(no_route) == {
        "detail": "No API endpoint or object at /api/no-such-endpoint/.",
        "kind": "not_found",
    }


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/exports/", "/projects/{project}/evaluations/"])
def test_a_number_field_that_is_no_number_is_an_invalid_on_the_page_not_a_caught_value_error(project, lead, url):
    # The pages parse their number fields with studio.inputs.form_number; a view no longer catches a bare
    # ValueError around a service call (which also turned a bug inside the service into a 400).
    client = Client()
    client.force_login(lead)
    page = client.post(
        url.format(project=project.pk),
        {"project": project.pk, "format": "trl", "model_dir": "/nowhere", "split_seed": "seven"},
    )
    assert page.status_code == 400 and "split_seed must be a number, not &#x27;seven&#x27;" in page.content.decode()
