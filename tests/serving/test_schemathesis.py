"""schemathesis against the served OpenAPI schema, authenticated (by API token) as each role.

Bounded: two generated examples per operation and role (the first is the simplest case hypothesis finds, the second
a random one), every operation for every role, so it runs in seconds. Checks:
no 5xx, every answer's status code is documented, and the answer matches its documented content type.
Writes run against a small real world (one project, traces, an open annotation).
"""

from __future__ import annotations

import pytest
import schemathesis  # a test dependency: missing means a broken install, not a skip
from django.core.wsgi import get_wsgi_application
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.permissions import Role
from tests.fixtures_annotation import make_traces

EXAMPLES_PER_OPERATION = 2
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance")


@pytest.fixture
def api_world(role_groups, project, annotator, lead, engineer, admin_user, tmp_path):
    from annotation.services import lease_next_trace
    from studio.security import api_token_issue

    make_traces(project, tmp_path, count=2, steps=2)
    lease_next_trace(user=annotator, project=project)
    users = {Role.ANNOTATOR: annotator, Role.LEAD: lead, Role.ENGINEER: engineer, Role.ADMIN: admin_user}
    return {role: api_token_issue(user=user) for role, user in users.items()}


@pytest.mark.heavy
def test_api_schema_holds_for_every_role(api_world):
    client = Client(HTTP_AUTHORIZATION=f"Token {api_world[Role.ADMIN]}")
    raw = client.get("/api/schema/?format=json").json()
    app = get_wsgi_application()
    failures: list[str] = []
    calls = 0
    for role, token in api_world.items():
        schema = schemathesis.openapi.from_dict(raw)
        schema.app = app
        schema.base_url = "http://testserver"
        for result in schema.get_all_operations():
            operation = result.ok()
            if operation.path in ("/api/schema/", "/api/token/"):
                continue  # the schema itself; the token endpoint would revoke the token this run uses

            def probe(data, operation=operation, token=token, role=role):
                nonlocal calls
                case = data.draw(operation.as_strategy())
                headers = {"Authorization": f"Token {token}"}
                response = case.call(headers=headers, app=app)
                calls += 1
                try:
                    case.validate_response(response, checks=_checks(), headers=headers)
                except Exception as exc:  # collected so one run reports every broken operation
                    failures.append(
                        f"{role} {operation.method.upper()} {operation.path} -> {response.status_code}: "
                        f"{str(exc).splitlines()[0][:200]}"
                    )

            settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )(given(data=st.data())(lambda data: probe(data)))()
    unique = sorted(set(failures))
    assert not unique, f"{len(unique)} schema violations in {calls} calls:\n" + "\n".join(unique[:60])
    assert calls > 100


def _checks():
    from schemathesis.checks import CHECKS as REGISTRY

    return [REGISTRY.get_by_names([name])[0] for name in CHECKS]
