"""The REST API as Python calls: one `requests` session with the token, bounded retries and clear errors.

Retries are urllib3's (`Retry`): connection errors and 502/503/504 answers are retried with backoff for
idempotent requests; a POST that creates a job is never sent twice behind the user's back.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

FINISHED = ("succeeded", "failed", "cancelled")
CHUNK = 1 << 20


class ApiError(Exception):
    """An answer the command cannot go on from; the message is the server's own where it sent one."""


@dataclass
class Download:
    path: Path
    size: int
    resumed_from: int
    sha256: str


class StudioClient:
    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, retries: int = 5):
        if not base_url:
            raise ApiError("no server: set TRACE_STUDIO_URL (e.g. https://studio.example.org)")
        if not token:
            raise ApiError("no token: set TRACE_STUDIO_TOKEN (make one on the studio's Account → API token page)")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})
        retry = Retry(
            total=retries,
            connect=retries,
            read=retries,
            backoff_factor=0.5,
            status_forcelist=(502, 503, 504),
            allowed_methods=frozenset({"GET", "HEAD"}),
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        adapter = HTTPAdapter(max_retries=retry)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    # --- plumbing ------------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.base_url}{path}"

    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", self.timeout)
        try:
            response = self.session.request(method, self._url(path), **kwargs)
        except requests.RequestException as exc:
            raise ApiError(f"{method} {path}: the studio could not be reached ({exc.__class__.__name__})") from exc
        if response.status_code >= 400:
            raise ApiError(f"{method} {path}: HTTP {response.status_code}: {_detail(response)}")
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    def _pages(self, path: str) -> Iterator[dict]:
        url: str | None = path
        while url:
            page = self._json("GET", url)
            if isinstance(page, list):
                yield from page
                return
            yield from page.get("results", [])
            url = page.get("next")

    # --- reads ---------------------------------------------------------------------------------
    def projects(self) -> list[dict]:
        return list(self._pages("/api/projects/"))

    def project(self, ref: str) -> dict:
        """A project by id or by exact name."""
        projects = self.projects()
        for p in projects:
            if str(p["id"]) == ref or p["name"] == ref:
                return p
        names = ", ".join(f"{p['id']}: {p['name']}" for p in projects) or "none"
        raise ApiError(f"no project {ref!r} visible to this token (projects: {names})")

    def rounds(self, project_id: int) -> list[dict]:
        return list(self._pages(f"/api/projects/{project_id}/rounds/"))

    def round_create(
        self, project_id: int, name: str, checkpoint: str, *, weights_hash: str = "", ran_at: str = ""
    ) -> dict:
        body = {"name": name, "checkpoint": checkpoint, "weights_hash": weights_hash}
        if ran_at:
            body["ran_at"] = ran_at
        return self._json("POST", f"/api/projects/{project_id}/rounds/", json=body)

    def slices(self, project_id: int) -> list[dict]:
        return self._json("GET", f"/api/projects/{project_id}/slices/")

    def slice(self, slice_id: int) -> dict:
        return self._json("GET", f"/api/slices/{slice_id}/")

    def slice_create(self, project_id: int, name: str, query: dict) -> dict:
        return self._json("POST", f"/api/projects/{project_id}/slices/", json={"name": name, "query": query})

    def evaluations(self, project_id: int) -> list[dict]:
        return self._json("GET", f"/api/projects/{project_id}/evaluations/")

    def evaluation(self, job_id: int) -> dict:
        return self._json("GET", f"/api/evaluations/{job_id}/")

    def import_job(self, job_id: int) -> dict:
        return self._json("GET", f"/api/imports/{job_id}/")

    def export_job(self, job_id: int) -> dict:
        return self._json("GET", f"/api/exports/{job_id}/")

    def export_formats(self) -> list[dict]:
        return self._json("GET", "/api/exports/formats/")

    def import_formats(self) -> list[dict]:
        return self._json("GET", "/api/imports/formats/")

    # --- writes --------------------------------------------------------------------------------
    def import_start(self, project_id: int, archive: Path, *, fmt: str = "", round_ref: str = "") -> dict:
        with archive.open("rb") as handle:
            files = {"file": (archive.name, handle, "application/octet-stream")}
            return self._json(
                "POST",
                f"/api/projects/{project_id}/imports/",
                files=files,
                data={"format": fmt, "round": round_ref},
                timeout=max(self.timeout, 600),
            )

    def export_start(self, project_id: int, fmt: str, options: dict) -> dict:
        return self._json("POST", f"/api/projects/{project_id}/exports/", json={"format": fmt, "options": options})

    def project_update(self, project_id: int, changes: dict) -> dict:
        return self._json("PATCH", f"/api/projects/{project_id}/", json=changes)

    def instructions_set(self, project_id: int, path: Path, *, replace: bool = False) -> dict:
        with path.open("rb") as handle:
            return self._json(
                "POST",
                f"/api/projects/{project_id}/instructions/",
                files={"file": (path.name, handle, "application/octet-stream")},
                data={"replace": "true" if replace else "false"},
            )

    def gold_mark(self, project_id: int, path: Path) -> dict:
        with path.open("rb") as handle:
            return self._json(
                "POST",
                f"/api/projects/{project_id}/gold/",
                files={"file": (path.name, handle, "application/octet-stream")},
            )

    def quality(self, project_id: int, *, first: str = "", last: str = "") -> dict:
        params = {name: value for name, value in (("from", first), ("to", last)) if value}
        return self._json("GET", f"/api/projects/{project_id}/quality/", params=params or None)

    def evaluation_start(self, project_id: int, body: dict) -> dict:
        return self._json("POST", f"/api/projects/{project_id}/evaluations/", json=body)

    def export_diff(self, export_id: int, against: int | None = None) -> dict:
        params = {"against": against} if against is not None else None
        return self._json("GET", f"/api/exports/{export_id}/diff/", params=params)

    # --- following a job -----------------------------------------------------------------------
    def wait(
        self,
        read: Callable[[], dict],
        *,
        on_progress: Callable[[dict], None],
        interval: float = 1.0,
        timeout: float | None = None,
    ) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = read()
            on_progress(job)
            if job["status"] in FINISHED:
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise ApiError(f"job {job['id']} still {job['status']} after {timeout:.0f} s")
            time.sleep(interval)

    # --- the bundle ----------------------------------------------------------------------------
    def download(
        self, job: dict, out_dir: Path, *, on_bytes: Callable[[int, int], None], chunk_size: int = CHUNK
    ) -> Download:
        """Fetch the bundle into ``out_dir``, resuming a ``.part`` file left by an interrupted run.

        The finished file must have the sha256 the server recorded for the job; a mismatch leaves nothing under
        the bundle's name (the partial file is removed so the next run starts clean)."""
        if job["status"] != "succeeded" or not job.get("download_url"):
            raise ApiError(f"export {job['id']} is {job['status']}: there is no bundle to download")
        expected_size, expected_sha = int(job["bundle_size"]), job["bundle_sha256"]
        out_dir.mkdir(parents=True, exist_ok=True)
        final = out_dir / f"export-{job['id']}.zip"
        part = final.with_name(final.name + ".part")
        for path in (part, final):
            if path.is_symlink():  # appending would write the bundle into whatever file the link names
                raise ApiError(f"{path} is a symbolic link; remove it (or choose another --out folder) and run again")
        have = part.stat().st_size if part.exists() else 0
        if have > expected_size:
            part.unlink()
            have = 0
        resumed_from = have
        if have < expected_size:
            headers = {"Range": f"bytes={have}-"} if have else {}
            response = self._request(
                "GET",
                job["download_url"],
                headers={**headers, "Accept": "application/zip"},
                stream=True,
                timeout=self.timeout,
            )
            if have and response.status_code != 206:  # the server sent the whole file: start over
                have = resumed_from = 0
            # O_NOFOLLOW: a link put in place after the check above is refused too, never followed.
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if have else os.O_TRUNC)
            try:
                descriptor = os.open(part, flags, 0o644)
            except OSError as exc:
                raise ApiError(f"{part}: cannot write the download ({exc.strerror})") from None
            with response, os.fdopen(descriptor, "ab" if have else "wb") as sink:
                for chunk in response.iter_content(chunk_size):
                    sink.write(chunk)
                    sink.flush()  # what was received survives an interrupted run, to be resumed
                    have += len(chunk)
                    on_bytes(have, expected_size)
        digest = _sha256(part)
        if digest != expected_sha:
            part.unlink()
            raise ApiError(
                f"checksum mismatch for export {job['id']}: got sha256 {digest}, the studio recorded "
                f"{expected_sha}; the partial file was removed, run the command again"
            )
        part.replace(final)
        return Download(path=final, size=final.stat().st_size, resumed_from=resumed_from, sha256=digest)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _detail(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])
    return str(body)[:500]


def bundle_verify(path: Path) -> int:
    """Check every file of a bundle against the sha256 its ``manifest.json`` lists; returns how many were checked."""
    import json
    import zipfile

    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        manifests = sorted((n for n in names if n.rsplit("/", 1)[-1] == "manifest.json"), key=lambda n: n.count("/"))
        if not manifests:
            raise ApiError(f"{path.name} has no manifest.json")
        prefix = manifests[0][: -len("manifest.json")]
        listed = json.loads(archive.read(manifests[0])).get("files", {})
        for name, entry in listed.items():
            member = prefix + name
            if member not in names:
                raise ApiError(f"{path.name}: {name} is in the manifest but not in the bundle")
            digest = hashlib.sha256()
            with archive.open(member) as handle:
                for block in iter(lambda: handle.read(CHUNK), b""):
                    digest.update(block)
            if digest.hexdigest() != entry["sha256"]:
                raise ApiError(f"{path.name}: {name} does not match the sha256 in manifest.json")
        return len(listed)
