"""A table of hostile inputs against every entry point of the running studio (API, pages, query strings).

Each row is one request; each must get a clear 4xx whose body names the problem (or, for the action
validator, a 200 that says ``valid: false`` with the reason) and never a 5xx; afterwards the annotation
still holds its last good draft. Archive internals (path traversal and links inside zips, zip and
decompression bombs, truncated and fake images, invalid UTF-8 and deep JSON in trace files, the valid
rest of a batch kept) are the importer's table: tests/traces/test_import_hostile.py. This file feeds the same
kinds of input through the HTTP entry points.
"""

from __future__ import annotations

import functools
import io
import json
import zipfile
from dataclasses import dataclass, field

import pytest
from django.test import Client

from tests.factories import make_world

SCRIPT = "<script>alert(1)</script><img src=x onerror=alert(2)>"
DEEP = "[" * 100_000 + "]" * 100_000


@dataclass
class Case:
    name: str
    role: str
    method: str
    url: str  # formatted with the world's ids
    body: object = None  # dict -> JSON; bytes -> raw JSON body; ("multipart", dict) -> form
    status: tuple = (400,)
    names: tuple = ()  # words the answer must contain (case-insensitive)
    settings: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)


def zip_bytes(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload(name: str, data: bytes, **fields):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return ("multipart", {"file": SimpleUploadedFile(name, data, content_type="application/octet-stream"), **fields})


CLICK = {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}
PUSHED = {"external_id": "pushed", "instruction": "Do it", "steps": [{"action": "wait()"}]}

CASES = [
    # --- JSON bodies ------------------------------------------------------------------------------
    Case(
        "malformed JSON",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        b'{"version": 1, "note": ',
        (400,),
        ("json",),
    ),
    Case(
        "invalid UTF-8 in JSON",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        b'{"version": 1, "note": "\xff\xfe"}',
        (400,),
        ("utf-8",),
    ),
    Case(
        "deeply nested JSON body",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        DEEP.encode(),
        (400,),
        ("json",),
    ),
    Case(
        "JSON body is a list",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        b"[1, 2, 3]",
        (400,),
        ("invalid data",),
    ),
    Case(
        "oversized request body",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        json.dumps({"version": 1, "note": "x" * (6 * 1024**2)}).encode(),
        (400, 413),
        ("too large", "big"),
    ),
    # --- annotation fields ------------------------------------------------------------------------
    Case(
        "huge note",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "note": "x" * 20001},
        (400,),
        ("note", "20000"),
    ),
    Case(
        "NUL byte in a thought",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "corrected_thought": "a\x00b"},
        (400,),
        ("corrected_thought", "null"),
    ),
    Case(
        "non-numeric version",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "latest", "note": "x"},
        (400,),
        ("version",),
    ),
    Case(
        "stale version",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": 1, "note": "old base"},
        (409,),
        ("version",),
    ),
    Case(
        "tau zero",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "tau": 0},
        (400,),
        ("tau",),
    ),
    Case(
        "tau past the last step",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "tau": 999},
        (400, 409, 422),
        ("tau",),
    ),
    Case(
        "tau not a number",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "tau": "3; DROP TABLE"},
        (400,),
        ("tau",),
    ),
    Case(
        "unknown verdict",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "verdict": "definitely"},
        (400,),
        ("verdict",),
    ),
    Case(
        "unknown error category",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "error_category": SCRIPT[:80]},
        (400, 422),
        ("category",),
    ),
    Case(
        "editor_state not an object",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "editor_state": "click"},
        (400, 422),
        ("editor_state",),
    ),
    Case(
        "unknown action type in editor",
        "annotator",
        "post",
        "/api/annotations/{annotation}/check-action/",
        {"slot": "corrected", "action": {"type": "frobnicate", "args": {}}, "tau": 1},
        (200, 400),
        ("frobnicate",),
    ),
    Case(
        "non-numeric coordinates in editor",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "editor_state": {"corrected": {"type": "click", "args": {"start_box": ["a", "b"]}}}},
        (400, 422),
        ("coordinate",),
    ),
    Case(
        "deep JSON in editor_state",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "editor_state": {"corrected": {"a": {"b": {"c": {"d": {}}}}}}},
        (400, 422),
        ("action",),
    ),
    Case(
        "check-action with unknown slot",
        "annotator",
        "post",
        "/api/annotations/{annotation}/check-action/",
        {"slot": "../../etc", "action": CLICK, "tau": 1},
        (400,),
        ("slot",),
    ),
    Case(
        "check-action with a string action",
        "annotator",
        "post",
        "/api/annotations/{annotation}/check-action/",
        {"slot": "corrected", "action": "click(start_box='(1,1)')", "tau": 1},
        (400, 422),
        ("action",),
    ),
    # --- action strings (the validator answers valid: false with the reason) ----------------------
    Case(
        "unknown action",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "frobnicate(x='1')", "width": 1920, "height": 1080, "project": "{project}"},
        (200,),
        ("frobnicate",),
    ),
    Case(
        "malformed action",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "click(start_box='(1,", "width": 1920, "height": 1080, "project": "{project}"},
        (200,),
        ("unbalanced", "malformed"),
    ),
    Case(
        "out-of-bounds click",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "click(start_box='(5000,5000)')", "width": 1920, "height": 1080, "project": "{project}"},
        (200,),
        ("outside",),
    ),
    Case(
        "non-numeric coordinates",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "click(start_box='(left,top)')", "width": 1920, "height": 1080, "project": "{project}"},
        (200,),
        ("malformed coordinates",),
    ),
    Case(
        "huge action string",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "type(content='" + "a" * 5000 + "')", "width": 1920, "height": 1080, "project": "{project}"},
        (400,),
        ("action", "4000"),
    ),
    Case(
        "zero screen width",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "wait()", "width": 0, "height": 1080, "project": "{project}"},
        (400,),
        ("width",),
    ),
    Case(
        "non-numeric project id",
        "annotator",
        "post",
        "/api/actions/validate/",
        {"action": "wait()", "width": 10, "height": 10, "project": "1 OR 1=1"},
        (400,),
        ("project",),
    ),
    # --- uploads --------------------------------------------------------------------------------
    Case(
        "upload that is not an archive",
        "lead",
        "post",
        "/api/projects/{project}/imports/",
        upload("evil.exe", b"MZ\x90\x00"),
        (400,),
        ("zip",),
    ),
    Case(
        "upload without a file",
        "lead",
        "post",
        "/api/projects/{project}/imports/",
        ("multipart", {"format": "native"}),
        (400,),
        ("file",),
    ),
    Case(
        "upload with an unknown format",
        "lead",
        "post",
        "/api/projects/{project}/imports/",
        upload("t.zip", zip_bytes({"a.json": b"{}"}), format="../../etc"),
        (400,),
        ("format",),
    ),
    Case(
        "upload over the size limit",
        "lead",
        "post",
        "/api/projects/{project}/imports/",
        upload("big.zip", b"PK" + b"\x00" * 4096),
        (413,),
        ("limit", "large", "bytes"),
        settings={"IMPORT_MAX_UPLOAD_BYTES": 1024},
    ),
    # --- other API fields -----------------------------------------------------------------------
    Case(
        "export with unknown format",
        "engineer",
        "post",
        "/api/projects/{project}/exports/",
        {"format": "../../etc/passwd"},
        (400,),
        ("format",),
    ),
    Case(
        "export with a bad fraction",
        "engineer",
        "post",
        "/api/projects/{project}/exports/",
        {"format": "{export_format}", "options": {"validation_fraction": "lots"}},
        (400,),
        ("validation_fraction",),
    ),
    Case(
        "prescore with unknown scorer",
        "lead",
        "post",
        "/api/projects/{project}/prescore/",
        {"scorer": SCRIPT},
        (400,),
        ("scorer",),
    ),
    Case(
        "prescore with foreign trace ids",
        "lead",
        "post",
        "/api/projects/{project}/prescore/",
        {"scorer": "rules", "trace_ids": [987654321]},
        (400,),
        ("987654321",),
    ),
    # --- query parameters and paths -------------------------------------------------------------
    Case("non-numeric page", "annotator", "get", "/api/projects/{project}/traces/?page=abc", None, (400,), ("page",)),
    Case(
        "review queue with a bogus status",
        "lead",
        "get",
        "/api/reviews/?status=" + "x" * 300,
        None,
        (400,),
        ("status",),
    ),
    Case(
        "review queue with a non-numeric project",
        "lead",
        "get",
        "/api/reviews/?project=1%27%20OR%201=1",
        None,
        (400, 404),
        ("project",),
    ),
    Case(
        "screenshot path traversal", "annotator", "get", "/screenshots/..%2F..%2Fetc%2Fpasswd/image", None, (404,), ()
    ),
    Case("screenshot of an unknown kind", "annotator", "get", "/screenshots/{sha}/..%2Fsettings.py", None, (404,), ()),
    # Digits str.isdigit takes and int() refuses ("²", or thousands of them), and numbers past any screen: each
    # was a 500 where a field is read as an id or a coordinate.
    Case(
        "superscript digit as a round",
        "lead",
        "get",
        "/api/projects/{project}/traces/?round=%C2%B2",
        None,
        (400,),
        ("round",),
    ),
    Case("superscript digit as the skipped annotation", "annotator", "get", "/queue/?skipped=%C2%B2", None, (200,), ()),
    Case(
        "suggestions job id of thousands of digits",
        "lead",
        "get",
        "/api/traces/{trace}/suggestions/?rules_job=" + "9" * 5000,
        None,
        (400,),
        ("rules_job",),
    ),
    Case(
        "import into a round of thousands of digits",
        "lead",
        "post",
        "/projects/{project}/import/",
        upload("t.zip", zip_bytes({"a.json": b"{}"}), round="1" * 5000),
        (400,),
        ("round",),
    ),
    Case(
        "review decision with a superscript version",
        "lead",
        "post",
        "/reviews/{annotation}/decide/",
        ("form", {"decision": "accept", "version": "\u00b2"}),
        (400, 409),
        ("submitted",),
    ),
    Case(
        "coordinate beyond any screen in editor",
        "annotator",
        "put",
        "/api/annotations/{annotation}/draft/",
        {"version": "{version}", "editor_state": {"corrected": {"type": "click", "args": {"start_box": [10**400, 5]}}}},
        (400,),
        ("no screen",),
    ),
    Case(
        "drag ending beyond any screen",
        "annotator",
        "post",
        "/api/actions/validate/",
        {
            "action": f"drag(start_box='(1,1)', end_box='({'9' * 400},1)')",
            "width": 10,
            "height": 10,
            "project": "{project}",
        },
        (200,),
        ("no screen",),
    ),
    # A runner's push reads the trace through the native importer: a wrong JSON type or a path no file system
    # takes was answered with Python's text ("TypeError: unhashable type: 'list'", "OSError: File name too long").
    Case(
        "pushed trace with a list as its outcome",
        "lead",
        "post",
        "/api/projects/{project}/traces/",
        ("multipart", {"trace": json.dumps({**PUSHED, "outcome": ["x"]})}),
        (400,),
        ("field 'outcome' must be str, found list",),
    ),
    Case(
        "pushed trace naming a screenshot too long for a file name",
        "lead",
        "post",
        "/api/projects/{project}/traces/",
        ("multipart", {"trace": json.dumps({**PUSHED, "steps": [{"action": "wait()", "screenshot": "s" * 5000}]})}),
        (400,),
        ("(5000 characters) is too long for a file name",),
    ),
    # PostgreSQL refuses what SQLite stores: a NUL in a query's value, text longer than its column.
    Case(
        "API token with a NUL",
        "anonymous",
        "get",
        "/api/projects/",
        None,
        (401, 403),
        ("invalid token",),
        headers={"Authorization": "Token abc\x00def"},
    ),
    Case(
        "webhook address longer than its column",
        "lead",
        "post",
        "/projects/{project}/webhooks/",
        ("form", {"url": "https://" + "a" * 600 + ".example/", "events": "bundle.ready"}),
        (400,),
        ("500 characters",),
    ),
    Case(
        "huge login username",
        "anonymous",
        "post",
        "/login/",
        ("form", {"username": "u" * 100_000, "password": "p"}),
        (200,),
        ("didn",),
    ),
]


@pytest.fixture
def world(db, project, annotator, lead, engineer, tmp_path):
    from exports.formats import format_names

    world = make_world(tmp_path, project=project, annotator=annotator, lead=lead, traces=1, steps=3, outsider=False)
    traces, annotation = world["traces"], world["annotation"]
    users = {"annotator": annotator, "lead": lead, "engineer": engineer, "anonymous": None}
    step = traces[0].steps.order_by("index").first()
    return {
        "users": users,
        "ids": {
            "annotation": annotation.pk,
            "project": project.pk,
            "trace": traces[0].pk,
            "sha": step.screenshot.sha256,
            "export_format": format_names()[0],
        },
        "annotation": annotation,
    }


def _fill(value, ids: dict):
    if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1] in ids:
        return ids[value[1:-1]]
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


def send(client: Client, case: Case, ids: dict):
    url = case.url.format(**{k: v for k, v in ids.items() if k != "version"})
    method = functools.partial(getattr(client, case.method), headers=case.headers)
    if case.body is None:
        return method(url)
    if isinstance(case.body, bytes):
        return method(url, data=case.body, content_type="application/json")
    if isinstance(case.body, tuple) and case.body[0] == "multipart":
        return method(url, data=case.body[1])
    if isinstance(case.body, tuple) and case.body[0] == "form":
        return method(url, data=case.body[1])
    return method(url, data=json.dumps(_fill(case.body, ids)), content_type="application/json")


def test_the_table_is_big_enough():
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_gets_a_clear_refusal(case, world, settings):
    from annotation.models import Annotation

    for key, value in case.settings.items():
        setattr(settings, key, value)
    annotation = world["annotation"]
    # A good draft first: whatever the hostile request does, it must still be there afterwards.
    client = Client()
    client.force_login(world["users"]["annotator"])
    good = client.put(
        f"/api/annotations/{annotation.pk}/draft/",
        data={"version": annotation.version, "note": "good draft"},
        content_type="application/json",
    )
    assert good.status_code == 200, good.content
    ids = dict(world["ids"], version=good.json()["version"])

    client = Client()
    if world["users"][case.role] is not None:
        client.force_login(world["users"][case.role])
    response = send(client, case, ids)
    body = response.content.decode("utf-8", "replace")
    assert response.status_code in case.status, f"{case.name}: {response.status_code} {body[:400]}"
    lowered = body.lower()
    if case.names:
        assert any(word.lower() in lowered for word in case.names), (
            f"{case.name}: answer does not name the problem: {body[:400]}"
        )
    if response.status_code >= 400 and case.url.startswith("/api/"):
        assert "json" in response.get("Content-Type", ""), f"{case.name}: error is not JSON"
    if "html" in response.get("Content-Type", ""):
        assert SCRIPT not in body  # never echoed back unescaped into a page (JSON with nosniff is inert)
    kept = Annotation.objects.get(pk=annotation.pk)
    assert kept.note == "good draft" and kept.version == ids["version"]


@pytest.mark.django_db
def test_script_payloads_in_every_text_field_render_as_text(world):
    """Stored script payloads come back as inert text on the workspace page and as plain JSON in the API."""
    annotation = world["annotation"]
    client = Client()
    client.force_login(world["users"]["annotator"])
    fields = {
        name: SCRIPT
        for name in ("note", "corrected_thought", "reflection_thought", "unusable_reason", "no_reflection_reason")
    }
    saved = client.put(
        f"/api/annotations/{annotation.pk}/draft/",
        data={"version": annotation.version, **fields},
        content_type="application/json",
    )
    assert saved.status_code == 200, saved.content
    page = client.get(f"/annotations/{annotation.pk}/").content.decode()
    assert "<script>alert(1)" not in page and "onerror=alert(2)>" not in page
    assert saved.json()["note"] == SCRIPT if "note" in saved.json() else True


@pytest.mark.django_db
@pytest.mark.parametrize("ref", ["\u00b2", "9" * 5000])
def test_commands_taking_an_id_refuse_digits_int_cannot_read(ref):
    # str.isdigit says yes to "²" (int refuses it) and to 5000 nines (past a bigint, and int's own limit): each
    # command answered with a traceback instead of naming the argument.
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="neither an export id nor a bundle file"):
        call_command("bundle_diff", ref, "1")
    with pytest.raises(CommandError, match="no project named"):
        call_command(
            "evaluate_checkpoint", "--project", ref, "--checkpoint", "ckpt", "--model-dir", "/nonexistent-model"
        )
