"""What changed between two bundles: python manage.py bundle_diff OLDER NEWER

Each of OLDER and NEWER is an export id or the path of a downloaded bundle (.zip); their lineage (the
(annotation id, version) pairs they were built from) is compared. ``--json`` prints the diff as JSON."""

import json
import zipfile
import zlib
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exports import lineage
from exports.models import ExportJob
from exports.selectors import held_by_base
from studio.inputs import id_from_text


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, or holding a NUL, names no bundle
        return False


def _sources(ref: str) -> tuple[str, list, int | None]:
    """A bundle's name, its (annotation id, version) pairs and, for an incremental bundle, its base export's id."""
    path = Path(ref)
    if _is_file(path):
        try:
            manifest = lineage.manifest_of_bundle(path)
        except zipfile.BadZipFile as exc:
            raise CommandError(f"{ref}: not a readable bundle (not a zip archive: {exc})") from None
        except KeyError:
            raise CommandError(f"{ref}: not a readable bundle (no manifest.json in the archive)") from None
        except (OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zlib.error) as exc:
            # a truncated or corrupt member, a bad CRC, encryption or an unknown compression, invalid JSON
            raise CommandError(f"{ref}: not a readable bundle ({exc.__class__.__name__}: {exc})") from None
        sources = manifest.get("sources", []) if isinstance(manifest, dict) else None
        try:
            lineage.sources_pairs(sources if isinstance(sources, list) else [None])  # refused here, not mid-diff
        except (TypeError, ValueError, KeyError, IndexError):
            raise CommandError(
                f"{ref}: not a readable bundle (its manifest's sources are not a list of annotation ids and versions)"
            ) from None
        base = ((manifest.get("lineage") or {}).get("since_export") or {}).get("id")
        return str(path), sources, base
    pk = id_from_text(ref)
    if pk is None:
        raise CommandError(f"{ref[:80]!r} is neither an export id nor a bundle file")
    job = ExportJob.objects.filter(pk=pk).first()
    if job is None:
        raise CommandError(f"no export {ref}")
    if job.sources is None:
        raise CommandError(f"export {ref} has no lineage ({job.status}; or made before lineage was kept)")
    return f"export {ref}", job.sources, (job.options or {}).get("since_export")


class Command(BaseCommand):
    help = (
        "List the annotations added, removed and changed (version) between two bundles, and those an incremental "
        "bundle left out because its base holds them."
    )

    def add_arguments(self, parser):
        parser.add_argument("older", help="export id or bundle .zip")
        parser.add_argument("newer", help="export id or bundle .zip")
        parser.add_argument("--json", action="store_true", help="print the diff as JSON")

    def handle(self, *args, **opts):
        older_name, older, _ = _sources(opts["older"])
        newer_name, newer, base_id = _sources(opts["newer"])
        diff = lineage.bundle_diff(older, newer, in_base=held_by_base(base_id, older=older, newer=newer))
        if opts["json"]:
            self.stdout.write(json.dumps({"older": older_name, "newer": newer_name, **diff.to_json()}, indent=2))
            return
        self.stdout.write(f"{older_name} -> {newer_name}: {diff.summary}")
        for pk, version in diff.added:
            self.stdout.write(f"+ annotation {pk} v{version}")
        for pk, old, new in diff.changed:
            self.stdout.write(f"~ annotation {pk} v{old} -> v{new}")
        for pk, version in diff.removed:
            self.stdout.write(f"- annotation {pk} v{version}")
