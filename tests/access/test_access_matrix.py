"""Every URL pattern and WebSocket route, for every role, against the one permission table.

The walker reads the URL conf itself, so a new URL is covered the day it lands; one that declares no
action (DRF ``permission_action`` or studio.permissions.PAGE_PERMISSIONS) fails here. For each URL and
method the expectation is object-aware (studio.access.can on the object the URL names: its project, its owner):
a user the rules refuse gets 302-to-login / 401 / 403 / 404; a user they allow never gets 401 / 403, nor a 404
on an object they reach (an annotator of another project gets 404 on this project's trace, the annotation's
owner 200, another annotator 404); nobody ever gets a 5xx. The same walk checks CSRF on every write and the security headers
on every page.

The walks are one test per URL (a failure names its URL). They share one world, built
once per process inside a transaction that each test rolls back to (``TestWalk``), and one session per role: a
request only carries the role's session cookie (``RoleSessions``).
"""

from __future__ import annotations

import concurrent.futures
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from studio.access import can
from studio.permissions import PAGE_PERMISSIONS, PERMISSIONS, PUBLIC, SOCKET_PERMISSIONS, Role
from studio.routing import websocket_urlpatterns
from tests.conftest import REPO
from tests.factories import make_world

WRITE_METHODS = ("post", "put", "patch", "delete")
DENIED = {401, 403, 404}


@dataclass(frozen=True)
class Route:
    route: str  # "api/projects/<int:project_id>/traces/"
    name: str | None
    namespaces: tuple[str, ...]
    callback: object

    @property
    def is_admin(self) -> bool:
        return "admin" in self.namespaces

    @property
    def drf_class(self):
        return getattr(self.callback, "cls", None)

    @property
    def kwarg_names(self) -> list[str]:
        return re.findall(r"<(?:\w+:)?(\w+)>", self.route) + re.findall(r"\(\?P<(\w+)>", self.route)

    def methods(self) -> list[str]:
        cls = self.drf_class
        if cls is not None:
            return [m for m in ("get", *WRITE_METHODS) if hasattr(cls, m)]
        return ["get", "post"]

    def action(self, method: str) -> str | None:
        cls = self.drf_class
        declared = getattr(cls, "permission_action", None) if cls is not None else None
        if isinstance(declared, dict):
            declared = declared.get(method.upper(), declared.get("*"))
        return declared or PAGE_PERMISSIONS.get(self.name)


def walk(resolver: URLResolver | None = None, prefix: str = "", namespaces: tuple = ()) -> list[Route]:
    resolver = resolver or get_resolver()
    routes = []
    for entry in resolver.url_patterns:
        text = str(entry.pattern).lstrip("^").rstrip("$").replace("\\/", "/")
        if isinstance(entry, URLResolver):
            routes += walk(entry, prefix + text, namespaces + ((entry.namespace,) if entry.namespace else ()))
        elif isinstance(entry, URLPattern):
            routes.append(Route(prefix + text, entry.name, namespaces, entry.callback))
    return routes


ROUTES = [r for r in walk() if not r.is_admin]


def _shadowed(route: Route) -> bool:
    from django.urls import resolve

    return resolve("/" + route.route).url_name != route.name  # e.g. admin/login/, sent to our throttled login


# The admin logout only ends a session, anyone may call it.
ADMIN_ROUTES = [r for r in walk() if r.is_admin and not r.kwarg_names and not _shadowed(r) and r.name != "logout"]


def undeclared(routes: list[Route]) -> list[str]:
    """``/route (name, METHOD)`` for each URL and method that names no action."""
    return [f"/{r.route} ({r.name}, {m.upper()})" for r in routes for m in r.methods() if r.action(m) is None]


def test_every_url_and_socket_declares_a_known_action():
    missing = undeclared(ROUTES)
    assert not missing, (
        "URLs without a permission action (add permission_action or a PAGE_PERMISSIONS entry):\n" + "\n".join(missing)
    )
    unknown = {a for r in ROUTES for m in r.methods() if (a := r.action(m)) not in PERMISSIONS and a != PUBLIC}
    unknown |= {a for a in SOCKET_PERMISSIONS.values() if a not in PERMISSIONS}
    assert not unknown, f"actions missing from PERMISSIONS: {sorted(unknown)}"
    sockets = [str(p.pattern) for p in websocket_urlpatterns]
    assert sockets and all(s in SOCKET_PERMISSIONS for s in sockets), f"sockets without an action: {sockets}"
    stale = set(PAGE_PERMISSIONS) - {r.name for r in walk()}
    assert not stale, f"PAGE_PERMISSIONS names no URL: {sorted(stale)}"


def test_control_a_url_without_a_rule_is_found():
    """A page whose name no app's permissions declare, and a DRF view without ``permission_action``."""
    from rest_framework.views import APIView

    def page(request):
        raise AssertionError("never called")

    class Unruled(APIView):
        def get(self, request):
            raise AssertionError("never called")

    ruled = next(r for r in ROUTES if r.name == "trace-detail")
    routes = [ruled, Route("pages/unruled/", "page-without-rule", (), page)]
    routes.append(Route("api/unruled/", "api-without-rule", (), Unruled.as_view()))
    assert undeclared(routes) == [
        "/pages/unruled/ (page-without-rule, GET)",
        "/pages/unruled/ (page-without-rule, POST)",
        "/api/unruled/ (api-without-rule, GET)",
    ]


def test_set_up_pages_are_walked_under_their_actions():
    """Project creation and settings (leads and admins) and a trace's instruction form."""
    actions = {r.name: r.action("post") for r in ROUTES}
    assert actions["project-create"] == actions["project-settings"] == "project.manage"
    assert actions["trace-instruction"] == "trace.edit"
    assert PERMISSIONS["project.manage"] == PERMISSIONS["trace.edit"] == frozenset({Role.LEAD, Role.ADMIN})


# --- the world: one object of each kind ---------------------------------------------------------


def build_world(tmp_path):
    from django.contrib.auth import get_user_model

    from evaluation.models import EvaluationJob
    from exports.formats import format_names
    from exports.services import export_job_create
    from prescoring.services import prescore_job_create
    from studio.demo import user_create_with_role
    from tests.conftest import TEST_PASSWORD
    from traces.services import import_job_create, project_create

    # The users and project of tests/conftest.py's fixtures, made here once for the whole walk.
    annotator = user_create_with_role(username="ann", password=TEST_PASSWORD, role=Role.ANNOTATOR)
    lead = user_create_with_role(username="leader", password=TEST_PASSWORD, role=Role.LEAD)
    engineer = user_create_with_role(username="eng", password=TEST_PASSWORD, role=Role.ENGINEER)
    admin_user = get_user_model().objects.create_superuser("root", "root@example.invalid", TEST_PASSWORD)
    project = project_create(name="Test project", members=[annotator, lead, engineer])
    world = make_world(tmp_path, project=project, annotator=annotator, lead=lead, rounds=(("round 1", "agent-v1", 1),))
    outsider, other, traces = world["outsider"], world["other"], world["traces"]
    first_round, annotation, lease = world["rounds"][0], world["annotation"], world["lease"]
    # A saved draft: the annotation has history (audit events), as every annotation a lead looks at has.
    from annotation.services import annotation_save_draft

    annotation = annotation_save_draft(
        annotation_id=annotation.pk, user=annotator, base_version=annotation.version, fields={"note": "first look"}
    )
    # A screenshot only this project uses (screenshots are shared by content; the other project's may match ours).
    from traces.models import Step

    others = Step.objects.filter(trace__project=other).values("screenshot_id")
    step = Step.objects.filter(trace__project=project).exclude(screenshot_id__in=others).order_by("id").first()
    objects = {
        "projects": project.pk,
        "queue": project.pk,
        "traces": traces[0].pk,
        "annotations": annotation.pk,
        "reviews": annotation.pk,
        # A saved version of it (the Versions panel's restore names one by its number).
        "versions": annotation.version,
        "leases": lease.pk,
        "screenshots": step.screenshot.sha256,
        "rounds": first_round.pk,
        # A runner's step push and end name the trace by its external_id (after traces/, like a pk).
        "external_id": traces[0].external_id,
        "imports": import_job_create(project=project, user=lead, upload_name="none.zip", original_name="none.zip").pk,
        "jobs": prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk,
        "exports": export_job_create(project=project, user=engineer, fmt=format_names()[0], enqueue=False).pk,
    }
    from webhooks.models import Delivery, Webhook

    hook = Webhook.objects.create(
        project=project, url="https://ci.example.org/hook", events=["bundle.ready"], secret="s"
    )
    objects["webhooks"] = hook.pk
    delivery = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={})
    objects["deliveries"] = delivery.pk
    # A replay request of the annotation's trace, as the service would leave it queued.
    from django.utils import timezone

    from replays.models import ReplayRequest

    replay = ReplayRequest.objects.create(
        project=project,
        annotation=annotation,
        annotation_version=annotation.version,
        trace=annotation.trace,
        tau=1,
        corrected_action="click(start_box='(10,20)')",
        reason="lead",
        deadline_at=timezone.now(),
    )
    objects["replays"] = replay.pk
    # A queued evaluation (no checkpoint directory is read: the row is made as the service would leave it).
    evaluation = EvaluationJob.objects.create(project=project, created_by=engineer, checkpoint="c", model_dir="/m")
    objects["evaluations"] = evaluation.pk
    # An alternative sampled at the annotation's first step (its rules are the annotation's: no instance of its own).
    from annotation.models import StepAlternative

    objects["alternatives"] = StepAlternative.objects.create(
        step=Step.objects.filter(trace=annotation.trace).order_by("index").first(),
        weights_hash="0" * 64,
        settings_key="0" * 64,
        number=1,
        reply="Action: click(start_box='(10,20)')",
        actions=[{"type": "click", "args": {"start_box": [10, 20]}, "style": "box"}],
    ).pk
    # A slice (a saved search) and a cluster of a clustering run, for the insights pages.
    from insights.models import Cluster, ClusterRun, Slice

    a_slice = Slice.objects.create(project=project, name="a slice", query={"q": "click"})
    objects["slices"] = a_slice.pk
    run = ClusterRun.objects.create(project=project, status="succeeded")
    a_cluster = Cluster.objects.create(run=run, kind="text", name="click, button", size=0, annotation_ids=[])
    objects["clusters"] = a_cluster.pk
    objects["cluster-runs"] = run.pk
    # A gold trace: the lead's accepted answer on the second trace as its reference (annotation.quality).
    from annotation.models import Annotation, AnnotationStatus, GoldTrace

    reference = Annotation.objects.create(
        trace=traces[1], project=project, annotator=lead, status=AnnotationStatus.ACCEPTED, verdict="no_error"
    )
    gold = GoldTrace.objects.create(
        trace=traces[1], project=project, reference=reference, reference_version=reference.version, marked_by=lead
    )
    objects["gold"] = gold.pk
    from annotation.models import Lease
    from exports.models import ExportJob
    from prescoring.models import PrescoreJob
    from traces.models import ImportJob

    # The object each URL segment names, for the object-aware expectation (a screenshot: its project's).
    instances = {
        "projects": project,
        "queue": project,
        "traces": traces[0],
        "annotations": annotation,
        "reviews": annotation,
        "leases": Lease.objects.get(pk=lease.pk),
        "screenshots": project,
        "rounds": first_round,
        "imports": ImportJob.objects.get(pk=objects["imports"]),
        "jobs": PrescoreJob.objects.get(pk=objects["jobs"]),
        "exports": ExportJob.objects.get(pk=objects["exports"]),
        "webhooks": hook,
        "deliveries": delivery,
        "evaluations": evaluation,
        "slices": a_slice,
        "clusters": a_cluster,
        "cluster-runs": run,
        "gold": gold,
        "replays": replay,
    }
    users = {
        "anonymous": None,
        "outsider": outsider,
        "annotator": annotator,
        "lead": lead,
        "engineer": engineer,
        "admin": admin_user,
    }
    return {"objects": objects, "instances": instances, "users": users, "project": project}


class RoleSessions:
    """One logged-in session per role, made once with the world: a request carries its cookie instead of logging in
    again. A request that ends the session (the logout URL) or changes its key gets the role a new one, kept until
    the test's rollback; ``for_test()`` starts each test from the world's own sessions."""

    def __init__(self, users: dict, keys: dict | None = None):
        self.users = users
        self.keys = keys if keys is not None else {role: self._login(user) for role, user in users.items() if user}

    @staticmethod
    def _login(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies[settings.SESSION_COOKIE_NAME].value

    def for_test(self) -> RoleSessions:
        return RoleSessions(self.users, dict(self.keys))

    def client(self, role: str, **options) -> Client:
        client = Client(**options)
        if self.users[role] is not None:
            client.cookies[settings.SESSION_COOKIE_NAME] = self.keys[role]
        return client

    def request(self, role: str, method: str, url: str, **options):
        client = self.client(role, **options)
        response = _request(client, method, url)
        if self.users[role] is not None:
            cookie = client.cookies.get(settings.SESSION_COOKIE_NAME)
            if cookie is None or cookie.value != self.keys[role]:
                self.keys[role] = self._login(self.users[role])
        return response


@pytest.fixture(scope="class")
def walk_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The world and the roles' sessions, once for a class's tests, in a transaction rolled back after the last;
    each test (``db``) runs in a savepoint of it and rolls back to it."""
    with django_db_blocker.unblock(), transaction.atomic():
        world = build_world(tmp_path_factory.mktemp("access-world"))
        world["sessions"] = RoleSessions(world["users"])
        yield world
        transaction.set_rollback(True)


@pytest.fixture
def world(walk_world, db):
    return {**walk_world, "sessions": walk_world["sessions"].for_test()}


FIXED_KWARGS = {"kind": "image"}


def url_for(route: Route, objects: dict) -> str:
    path = route.route
    for match in re.finditer(r"([\w-]+)/<(?:\w+:)?(\w+)>", route.route):
        segment, name = match.groups()
        value = FIXED_KWARGS.get(name, objects.get(name, objects.get(segment)))
        if value is None:
            pytest.fail(f"/{route.route}: no object for <{name}> after '{segment}/'; add one to the world fixture")
        path = path.replace(match.group(0), f"{segment}/{value}", 1)
    for match in re.finditer(r"<(?:\w+:)?(\w+)>", path):  # one not after a segment name: /screenshots/<sha>/<kind>
        if match.group(1) not in FIXED_KWARGS:
            pytest.fail(f"/{route.route}: no value for <{match.group(1)}>; add one to FIXED_KWARGS")
        path = path.replace(match.group(0), FIXED_KWARGS[match.group(1)], 1)
    return "/" + path


def object_of(route: Route, instances: dict):
    """The object the URL names (its last ``segment/<id>``), or None for a URL without one."""
    segments = re.findall(r"([\w-]+)/<(?:\w+:)?\w+>", route.route)
    segments = [s for s in segments if s in instances]
    return instances[segments[-1]] if segments else None


def allowed(user, action: str, obj) -> bool:
    """What the rules say for this user, action and object: role, membership of its project, ownership."""
    if action == PUBLIC:
        return True
    if user is None:
        return False
    return can(user, action, obj)


# Where an allowed user may still get a 404 that is no refusal: asking for the next trace when none is left open
# to them (the walk's earlier users took the world's two traces).
NOTHING_LEFT_404 = {"annotation-next-trace", "api-next-trace"}


def _request(client: Client, method: str, url: str):
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, data="{}", content_type="application/json")


def _is_login_redirect(response) -> bool:
    return response.status_code == 302 and "login" in response.get("Location", "")


ALL_METHODS = ("get", "post", "put", "patch", "delete")


def _allowed_methods(response) -> set[str]:
    return {m.strip().upper() for m in response.get("Allow", "").split(",") if m.strip()}


def _route_id(route: Route) -> str:
    return f"{route.name or '-'}:/{route.route}"


def test_the_walks_cover_enough_urls_and_methods():
    """The per-URL walks below check each answer; this keeps the walk from shrinking unnoticed: every role on every
    method of every URL, the writes without a CSRF token, and the methods the API views do not take."""
    assert sum(len(route.methods()) for route in ROUTES) * 6 > 200
    assert len(ROUTES + ADMIN_ROUTES) * len(WRITE_METHODS) > 100
    undeclared = [m for r in ROUTES if r.drf_class is not None for m in ALL_METHODS if m not in r.methods()]
    assert len(undeclared) * 3 > 100
    assert sum(bool(re.search(r"[\w-]+/<", route.route)) for route in ROUTES) > 10


@pytest.mark.django_db
class TestWalk:
    """Every URL against the table, on one world (``walk_world``) that each test rolls back to."""

    @pytest.mark.parametrize("route", ROUTES, ids=_route_id)
    def test_every_url_answers_each_role_as_the_table_says(self, world, route):
        objects, instances, sessions = world["objects"], world["instances"], world["sessions"]
        problems, checked, pages, reached = [], 0, [], 0
        url = url_for(route, objects)
        obj = object_of(route, instances)
        for method in route.methods():
            action = route.action(method)
            if sessions.request("admin", method, url).status_code == 405:
                continue  # the view does not take this method at all
            for role, user in world["users"].items():
                response = sessions.request(role, method, url)
                checked += 1
                status = response.status_code
                reached += obj is not None and allowed(user, action, obj)
                expect_ok = allowed(user, action, obj)
                where = f"{method.upper()} {url} as {role} ({action})"
                if status >= 500:
                    problems.append(f"{where}: {status}")
                elif expect_ok and (status in (401, 403) or (action != PUBLIC and _is_login_redirect(response))):
                    problems.append(f"{where}: refused with {status} though the table allows it")
                elif (
                    expect_ok
                    and status == 404
                    and obj is not None
                    and route.name not in NOTHING_LEFT_404
                    and type(obj).objects.filter(pk=obj.pk).exists()  # an earlier user's DELETE may have removed it
                ):
                    problems.append(f"{where}: 404 though the rules let this user reach {obj!r}")
                elif not expect_ok and not (status in DENIED or _is_login_redirect(response)):
                    problems.append(f"{where}: answered {status} though the table refuses it")
                elif (
                    not expect_ok
                    and url.startswith("/api/")
                    and not url.startswith(("/api/docs", "/api/schema"))
                    and status in (401, 403)
                ):
                    if "json" not in response.get("Content-Type", "") or "detail" not in response.json():
                        problems.append(f"{where}: refusal is not JSON with a detail")
                if method == "get" and status == 200 and "text/html" in response.get("Content-Type", ""):
                    pages.append((url, response))
        assert not problems, f"{len(problems)} of {checked} answers disagree with the table:\n" + "\n".join(problems)
        assert checked, f"/{route.route}: no method of it answered the admin with anything but 405"
        assert obj is None or reached, f"/{route.route}: no role the rules allow on {obj!r} was walked"
        # Security headers on every page an allowed user saw (the admin and Swagger UI bring their own inline JS).
        bad = []
        for page_url, response in pages:
            if page_url.startswith(("/admin/", "/api/docs")):
                continue
            csp = response.get("Content-Security-Policy", "")
            script_src = re.search(r"script-src ([^;]*)", csp)
            if not script_src or "unsafe-inline" in script_src.group(1) or "'self'" not in script_src.group(1):
                bad.append(f"{page_url}: CSP {csp!r}")
            if response.get("X-Content-Type-Options") != "nosniff" or response.get("X-Frame-Options") != "DENY":
                bad.append(f"{page_url}: nosniff/frame headers missing")
        assert not bad, "\n".join(bad)

    def test_the_walk_sees_pages(self, world):
        """The header checks above run on the pages allowed users see: there are such pages."""
        sessions = world["sessions"]
        response = sessions.request("lead", "get", f"/projects/{world['objects']['projects']}/search/")
        assert response.status_code == 200 and "text/html" in response["Content-Type"]

    def test_admin_site_is_for_admins_only(self, world):
        sessions = world["sessions"]
        for route in ADMIN_ROUTES:
            url = "/" + route.route
            for role in world["users"]:
                response = sessions.request(role, "get", url)
                assert response.status_code < 500, (url, role)
                if role == "admin":
                    assert not _is_login_redirect(response), (url, role)  # autocomplete may 403 without parameters
                else:
                    assert response.status_code in DENIED or _is_login_redirect(response), (
                        url,
                        role,
                        response.status_code,
                    )

    @pytest.mark.parametrize("route", ROUTES + ADMIN_ROUTES, ids=_route_id)
    def test_every_write_needs_a_csrf_token(self, world, route):
        """A logged-in browser session that sends a write without the CSRF token is refused everywhere."""
        sessions = world["sessions"]
        url = url_for(route, world["objects"])
        problems = []
        for method in WRITE_METHODS:
            response = sessions.request("lead", method, url, enforce_csrf_checks=True)
            if response.status_code == 405 and route.drf_class is not None and method not in route.methods():
                continue  # a method the view does not take changes nothing: refused before the token matters
            if response.status_code != 403:
                problems.append(f"{method.upper()} {url}: {response.status_code} without a CSRF token")
        assert not problems, "\n".join(problems)

    def test_expired_session_gets_json_401_or_403_and_the_draft_survives(self, world):
        from annotation.models import Annotation

        annotator = world["users"]["annotator"]
        annotation = Annotation.objects.get(pk=world["objects"]["annotations"])
        client = Client()
        client.force_login(annotator)
        version = annotation.version
        saved = client.put(
            f"/api/annotations/{annotation.pk}/draft/",
            data={"version": version, "note": "kept through expiry"},
            content_type="application/json",
        )
        assert saved.status_code == 200, saved.content
        client.session.flush()  # what expiry does: the session row is gone
        client.cookies.pop("sessionid", None)
        refused = client.put(
            f"/api/annotations/{annotation.pk}/draft/",
            data={"version": version + 1, "note": "after expiry"},
            content_type="application/json",
        )
        assert refused.status_code in (401, 403) and "detail" in refused.json()
        page = client.get(f"/annotations/{annotation.pk}/")
        assert _is_login_redirect(page)
        annotation.refresh_from_db()
        assert annotation.note == "kept through expiry" and annotation.version == version + 1

    @pytest.mark.parametrize("route", ROUTES, ids=_route_id)
    def test_a_method_no_view_takes_is_405_with_allow_for_everyone(self, world, route):
        """PUT, POST or PATCH on /api/traces/<id>/ once answered 500 to anyone (the permission lookup's KeyError),
        and so did a POST with X-HTTP-Method-Override. Every method on every URL, for every role: never a 5xx; a method
        the view does not take is 405 naming the ones it does (`Allow`), decided before the role (an anonymous caller
        gets the same 405, not a 401 that would send it to log in for a method that cannot work)."""
        sessions = world["sessions"]
        problems, refused = [], 0
        url = url_for(route, world["objects"])
        declared = set(route.methods()) if route.drf_class is not None else None
        for method in ALL_METHODS:
            for role in ("anonymous", "annotator", "admin"):
                response = sessions.request(role, method, url)
                where = f"{method.upper()} {url} as {role}"
                if response.status_code >= 500:
                    problems.append(f"{where}: {response.status_code}")
                    continue
                if declared is not None and method not in declared:
                    if response.status_code != 405 or method.upper() in _allowed_methods(response):
                        problems.append(f"{where}: {response.status_code}, Allow {response.get('Allow')!r}")
                    elif not _allowed_methods(response) & {m.upper() for m in declared}:
                        problems.append(f"{where}: Allow {response.get('Allow')!r} names none of {declared}")
                    refused += 1
                if response.status_code == 405:
                    if not _allowed_methods(response) or method.upper() in _allowed_methods(response):
                        problems.append(f"{where}: 405 with Allow {response.get('Allow')!r}")
            if method in ("put", "patch", "delete"):
                client = sessions.client("admin")
                response = client.post(
                    url, data="{}", content_type="application/json", HTTP_X_HTTP_METHOD_OVERRIDE=method
                )
                if response.status_code >= 500:
                    problems.append(f"POST {url} overridden to {method.upper()}: {response.status_code}")
        assert not problems, f"{len(problems)} answers:\n" + "\n".join(problems)
        if declared is not None:
            assert refused == 3 * len(set(ALL_METHODS) - declared)

    def test_a_put_on_a_trace_is_405_for_anyone(self, world, client):
        url = f"/api/traces/{world['objects']['traces']}/"
        for role in ("anonymous", "annotator", "lead", "admin"):
            client = Client()
            if world["users"][role] is not None:
                client.force_login(world["users"][role])
            for method in ("put", "patch", "post"):
                response = _request(client, method, url)
                assert response.status_code == 405, (role, method, response.status_code)
                assert _allowed_methods(response) >= {"GET", "DELETE"} and method.upper() not in _allowed_methods(
                    response
                )
                assert "not allowed" in response.json()["detail"]


# --- WebSocket consumers -------------------------------------------------------------------------


def _sockets(attempts: list[tuple]) -> list[tuple]:
    """Each ``(user, query)``'s socket opened and closed in turn, in one event loop: ``(connected, close code,
    hello)``. One loop for all: a closed socket's Channels receive on Redis is shielded until its blocking pop ends
    (seconds), which a loop's shutdown waits out."""
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth.models import AnonymousUser

    async def attempt(user, query):
        communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/live/{query}")
        communicator.scope["user"] = user or AnonymousUser()
        connected, code = await communicator.connect(timeout=10)
        hello = await communicator.receive_json_from(timeout=10) if connected else None
        if connected:
            await communicator.disconnect()
        return connected, code, hello

    async def every():
        return [await attempt(user, query) for user, query in attempts]

    # On a thread of its own: a browser test earlier in the same process may leave an event loop on this one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(async_to_sync(every)).result()


@pytest.mark.django_db(transaction=True)
def test_live_socket_follows_the_table(project, annotator, lead, engineer, admin_user, make_user):
    from traces.services import project_create

    outsider = make_user("outsider", Role.ANNOTATOR)
    project_create(name="Other", members=[outsider])
    action = SOCKET_PERMISSIONS["ws/live/"]
    roles = {
        "anonymous": None,
        "outsider": outsider,
        "annotator": annotator,
        "lead": lead,
        "engineer": engineer,
        "admin": admin_user,
    }
    # With this project named, and without a project filter (a socket may open then, but never with a project the
    # table refuses).
    named = dict(zip(roles, _sockets([(user, f"?project={project.pk}") for user in roles.values()]), strict=True))
    unnamed = dict(zip(roles, _sockets([(user, "") for user in roles.values()]), strict=True))
    for role, user in roles.items():
        connected, code, hello = named[role]
        if user is not None and can(user, action, project):
            assert connected and hello["projects"] == [project.pk], role
        else:
            assert not connected, (role, code)
            opened, _, hello = unnamed[role]
            assert not opened or project.pk not in hello["projects"], role


# --- session expiry, login throttling, tokens, deploy check -------------------------------------


@pytest.mark.django_db
def test_login_is_throttled_per_user_and_address(annotator):
    from studio.security import LOGIN_MAX_FAILURES

    client = Client()
    for _ in range(LOGIN_MAX_FAILURES):
        assert client.post("/login/", {"username": "ann", "password": "wrong"}).status_code == 200
    refused = client.post("/login/", {"username": "ann", "password": "correct-horse-battery-7"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert b"Too many failed logins" in refused.content
    # Another address is not locked out by this one.
    other = Client(REMOTE_ADDR="10.9.8.7")
    assert other.post("/login/", {"username": "ann", "password": "correct-horse-battery-7"}).status_code == 302
    # The admin's login goes through the same throttle.
    assert client.get("/admin/login/").headers["Location"].startswith("/login/")


@pytest.mark.django_db
def test_engineer_issues_and_revokes_an_api_token(engineer, annotator, project):
    client = Client()
    client.force_login(engineer)
    key = client.post("/api/token/").json()["token"]
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/projects/").status_code == 200
    replaced = client.post("/account/token/", {"do": "issue"})
    assert replaced.status_code == 200 and b"api-token" in replaced.content
    assert api.get("/api/projects/").status_code in (401, 403)  # the old key died with the new one
    new_key = re.search(rb'id="api-token">([0-9a-f]+)<', replaced.content).group(1).decode()
    api = Client(HTTP_AUTHORIZATION=f"Token {new_key}")
    assert api.get("/api/projects/").status_code == 200
    assert client.delete("/api/token/").status_code == 204
    assert api.get("/api/projects/").status_code in (401, 403)
    assert client.get("/api/token/").json() == {"has_token": False}
    ann = Client()
    ann.force_login(annotator)
    assert ann.post("/api/token/").status_code == 403


@pytest.mark.subprocess
def test_check_deploy_is_clean_in_production_mode(tmp_path, collected_static):
    env = {
        "PATH": "/usr/bin:/bin",
        "STUDIO_MODE": "production",
        "STUDIO_SECRET_KEY": secrets.token_urlsafe(64),
        "STUDIO_ALLOWED_HOSTS": "studio.example.org",
        "STUDIO_DATA_DIR": str(tmp_path),
        "STUDIO_STATIC_ROOT": str(collected_static),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
