"""API tokens (a bad or revoked one is a 401 with a challenge; a bundle URL outlives a revoked token by a minute at
most), files the studio must not trust (a malformed bundle in a diff, a symlinked part file for the CLI) and the full
stack's Caddy admin address."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from studio.security import api_token_issue, api_token_revoke


@pytest.mark.django_db
def test_a_bad_or_revoked_token_is_401_with_a_challenge(project, engineer):
    url = "/api/projects/"
    key = api_token_issue(user=engineer)
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").get(url).status_code == 200
    api_token_revoke(user=engineer)
    for header in (f"Token {key}", "Token nope", "Token " + "a" * 40, None):
        client = Client(HTTP_AUTHORIZATION=header) if header else Client()
        response = client.get(url)
        assert response.status_code == 401, (header, response.status_code)
        assert response["WWW-Authenticate"] == "Token"
        assert response.json()["detail"] in ("Invalid token.", "Authentication credentials were not provided.")
    session = Client()
    session.force_login(engineer)
    assert session.get(url).status_code == 200  # a browser's session still reaches the API


def _zip(path, members: dict[str, bytes]):
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.subprocess
@pytest.mark.django_db
def test_bundle_diff_names_a_malformed_bundle_without_a_traceback(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO

    good = _zip(tmp_path / "good.zip", {"manifest.json": b'{"sources": [{"annotation_id": 1, "version": 2}]}'})
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(good.read_bytes()[:40])
    corrupt = bytearray(good.read_bytes())
    corrupt[40:44] = b"\xff\xff\xff\xff"  # inside the member's data: a bad CRC or a broken stream
    (tmp_path / "corrupt.zip").write_bytes(bytes(corrupt))
    cases = {
        "not-a-zip": (tmp_path / "plain.zip", "not a zip archive"),
        "truncated": (truncated, "not a readable bundle"),
        "corrupt": (tmp_path / "corrupt.zip", "not a readable bundle"),
        "no manifest": (_zip(tmp_path / "empty.zip", {"a.txt": b"x"}), "no manifest.json"),
        "bad json": (_zip(tmp_path / "json.zip", {"manifest.json": b"{"}), "not a readable bundle"),
        "bad sources": (_zip(tmp_path / "src.zip", {"manifest.json": b'{"sources": [[1]]}'}), "sources are not"),
        "sources not a list": (_zip(tmp_path / "src2.zip", {"manifest.json": b'{"sources": 7}'}), "sources are not"),
        "manifest not an object": (_zip(tmp_path / "m.zip", {"manifest.json": b"[1]"}), "sources are not"),
    }
    (tmp_path / "plain.zip").write_bytes(b"hello, not a zip")
    for name, (path, words) in cases.items():
        result = subprocess.run(
            [sys.executable, "manage.py", "bundle_diff", str(good), str(path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode != 0 and "Traceback" not in result.stderr, (name, result.stderr[-1500:])
        assert words in result.stderr and str(path) in result.stderr, (name, result.stderr)


def test_the_cli_refuses_to_append_to_a_symlinked_part_file(tmp_path):
    from trace_studio_cli.client import ApiError, StudioClient

    target = tmp_path / "victim.txt"
    target.write_bytes(b"keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "export-7.zip.part").symlink_to(target)
    job = {"id": 7, "status": "succeeded", "download_url": "http://127.0.0.1:9/x", "bundle_size": 100}
    job["bundle_sha256"] = "0" * 64
    client = StudioClient("http://127.0.0.1:9", "token", retries=0)
    with pytest.raises(ApiError, match="export-7.zip.part is a symbolic link"):
        client.download(job, out, on_bytes=lambda have, total: None)
    assert target.read_bytes() == b"keep me"


def test_the_full_stack_caddy_takes_an_admin_address_of_its_own():
    """The full-stack test's Caddy once took the default admin port 2019, so it could not start beside another
    Caddy on the same host. The Caddyfile reads the admin address from STUDIO_PROXY_ADMIN, the stack gives it a free
    port (where caddy is installed, tests/serving/test_compose.py validates the Caddyfile)."""
    import re

    from tests.conftest import REPO

    caddyfile = (REPO / "deploy" / "Caddyfile").read_text()
    global_block = caddyfile[caddyfile.index("{") : caddyfile.index("\n}\n")]
    assert re.search(r"^\s*admin \{\$STUDIO_PROXY_ADMIN:localhost:2019\}$", global_block, re.M)
    stack = (REPO / "tests" / "stack.py").read_text()
    assert '"STUDIO_PROXY_ADMIN": f"127.0.0.1:{self.ports[\'caddy_admin\']}"' in stack


def test_a_bundle_url_outlives_a_revoked_token_by_a_minute_at_most(settings, monkeypatch):
    """A presigned URL once kept working up to 900 s after the token that asked for it was revoked; a signed
    URL cannot be withdrawn, so a bundle's lives STUDIO_S3_BUNDLE_URL_EXPIRY_S (60 s) and screenshots keep theirs."""
    from urllib.parse import parse_qs, urlsplit

    from exports import storage as export_storage
    from studio.s3 import StudioS3Storage

    s3 = StudioS3Storage(
        bucket_name="b", endpoint_url="http://127.0.0.1:9", access_key="a", secret_key="s", region_name="us-east-1"
    )
    monkeypatch.setattr(export_storage, "default_storage", s3)
    settings.AWS_QUERYSTRING_EXPIRE = 900
    url = export_storage.presigned_url("exports/1/export-1.zip", filename="export-1.zip")
    query = parse_qs(urlsplit(url).query)
    if "X-Amz-Expires" in query:  # signature version 4: a lifetime
        assert query["X-Amz-Expires"] == ["60"]
    else:  # version 2: the moment it ends
        assert 55 <= int(query["Expires"][0]) - time.time() <= 61, query
