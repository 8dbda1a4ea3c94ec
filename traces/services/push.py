"""Runners push a trace whole while they run: an archive, or a native trace object with its screenshots, read by the
importers and stored as an import's trace."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.translation import gettext

from studio.errors import Conflict, Invalid
from traces.importers import IMPORTERS, ArchiveError, TraceReadError, UnknownFormat, iter_traces, opened_source
from traces.models import Project, Round
from traces.services.trace_import import TraceImportResult, trace_import_one

if TYPE_CHECKING:
    from django.core.files.uploadedfile import UploadedFile

PUSH_TRACE_FILE = "trace.json"
PUSH_FOLDER_PREFIX = "push-"  # studio.jobs.jobs_sweep_files removes what a killed process leaves


def trace_push(
    *,
    project: Project,
    round: Round | None,
    archive: UploadedFile | None = None,
    document: bytes | None = None,
    screenshots: Iterable[UploadedFile] = (),
    fmt: str = "",
) -> TraceImportResult:
    """Store one trace a runner sends while it runs, through the importers' own path: either ``archive`` (a .zip
    in any import layout, holding one trace) or ``document`` (a native trace object, docs/formats.md §1) with
    ``screenshots`` (uploaded files whose names are the paths the document gives).

    Idempotent by content (traces/identity.py): a trace the project already has, under whichever external_id, is
    answered as it is (``created`` False), unless it lies in another round than ``round`` (Conflict, naming both).
    An external_id the project holds with other content, or for a trace still receiving steps, is a
    ``TraceIdTaken`` (Conflict) saying what differs: a retried push is never answered with another trace. Invalid for
    a request that holds no trace, several, or one the importer cannot read (the message says where)."""
    if (archive is None) == (document is None):
        raise Invalid(
            gettext("send the trace either as file (a .zip) or as trace (a native trace object) with screenshots")
        )
    if fmt and fmt not in IMPORTERS:
        raise Invalid(
            gettext("format: unknown format %(format)s (known: %(formats)s)")
            % {"format": repr(fmt), "formats": ", ".join(sorted(IMPORTERS))},
            field="format",
        )
    spool = Path(settings.FILE_UPLOAD_TEMP_DIR)
    spool.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=PUSH_FOLDER_PREFIX, dir=spool) as tmp:
        folder = Path(tmp) / "trace"
        folder.mkdir()
        if archive is not None:
            source = Path(tmp) / "push.zip"
            _upload_write(archive, source)
        else:
            source = folder
            _upload_write(document or b"", folder / PUSH_TRACE_FILE)
            for upload in screenshots:
                name = Path(upload.name or "").name
                if not name or name != upload.name or name in (PUSH_TRACE_FILE, ".", ".."):
                    raise Invalid(
                        gettext("screenshots: %(name)s is no plain file name") % {"name": repr(upload.name)},
                        field="screenshots",
                    )
                if (folder / name).exists():
                    raise Invalid(gettext("screenshots: %(name)s is sent twice") % {"name": name}, field="screenshots")
                _upload_write(upload, folder / name)
            fmt = fmt or "native"
        try:
            named = Path(getattr(archive, "name", "") or "").stem if archive is not None else ""
            with opened_source(source, scratch=Path(tmp), name=named) as (root, report):
                if report and report.refused:
                    refused = gettext("; ").join(str(r.get("error", r)) for r in report.refused)
                    raise Invalid(gettext("file: %(problems)s") % {"problems": refused}, field="file")
                found = iter_traces(root, fmt or None)
                first = next(found, None)
                if first is None:
                    raise Invalid(
                        gettext("the request holds no trace"), field="file" if archive is not None else "trace"
                    )
                if next(found, None) is not None:
                    raise Invalid(gettext("push one trace per request (use the import API for a batch)"))
                if isinstance(first, TraceReadError):
                    raise Invalid(str(first).replace(str(Path(tmp)), ""))
                try:
                    result = trace_import_one(
                        project=project, imported=first, round=round, distinct_id_when_taken=False
                    )
                except TraceReadError as exc:
                    raise Invalid(str(exc)) from None
        except (ArchiveError, UnknownFormat) as exc:
            raise Invalid(str(exc).replace(str(Path(tmp)) + "/", "")) from None
    if not result.created and result.trace.round_id != (round.pk if round else None):
        held = result.trace.round.name if result.trace.round is not None else gettext("no round")
        raise Conflict(
            gettext(
                "trace %(trace)s is already stored, in %(round)s; an external_id names one trace of the project, "
                "whichever round"
            )
            % {"trace": repr(result.trace.external_id), "round": held},
            trace=result.trace.pk,
        )
    return result


def _upload_write(content: bytes | bytearray | UploadedFile, path: Path) -> None:
    """Bytes, or an uploaded file (read in chunks), to ``path``."""
    with path.open("wb") as out:
        if isinstance(content, bytes | bytearray):
            out.write(content)
            return
        for chunk in content.chunks() if hasattr(content, "chunks") else iter(lambda: content.read(1 << 20), b""):
            out.write(chunk)
