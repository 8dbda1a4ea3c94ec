"""Bundle lineage: which annotation versions a bundle holds, and what changed between two bundles.

A bundle's sources are the (annotation id, version) pairs it was built from (its manifest's ``sources``, kept on the
export job too). An annotation whose version moved between two bundles was edited (re-reviewed, re-adjudicated) in
between, so its samples may differ; one missing from the newer bundle was rejected, re-opened or replaced by
another answer on its trace, unless the newer bundle is incremental and left it out because its base holds it. Pure functions: no database, so the management command also diffs downloaded bundles.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class BundleDiff:
    added: list[tuple[int, int]] = field(default_factory=list)  # (annotation id, version) only in the newer bundle
    removed: list[tuple[int, int]] = field(default_factory=list)  # (annotation id, version) only in the older one
    changed: list[tuple[int, int, int]] = field(default_factory=list)  # (annotation id, older version, newer version)
    unchanged: int = 0
    # (annotation id, version) only in the older bundle that an incremental newer bundle left out because its base
    # export holds them at that version: not removed, in the base already.
    in_base: list[tuple[int, int]] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """The diff in one line, as the command line, the management command and the page say it."""
        return (
            f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed, "
            + (f"{len(self.in_base)} already in the base, " if self.in_base else "")
            + f"{self.unchanged} unchanged"
        )

    def to_json(self) -> dict:
        return {
            "added": [{"annotation_id": pk, "version": version} for pk, version in self.added],
            "removed": [{"annotation_id": pk, "version": version} for pk, version in self.removed],
            "changed": [{"annotation_id": pk, "from_version": old, "to_version": new} for pk, old, new in self.changed],
            "unchanged": self.unchanged,
            "in_base": [{"annotation_id": pk, "version": version} for pk, version in self.in_base],
            "summary": self.summary,
        }


def sources_pairs(sources: Iterable) -> dict[int, int]:
    """{annotation id: version} from a manifest's ``sources`` (dicts) or stored pairs (lists)."""
    pairs: dict[int, int] = {}
    for item in sources:
        pk, version = (item["annotation_id"], item["version"]) if isinstance(item, dict) else item
        pairs[int(pk)] = int(version)
    return pairs


def bundle_diff(older: Iterable, newer: Iterable, *, in_base: Iterable = ()) -> BundleDiff:
    """What ``newer`` holds that ``older`` did not, what it lost, and which annotations moved to another version.

    ``in_base``: pairs an incremental ``newer`` left out because its base export holds them at that version
    (``exports.selectors.held_by_base``); an older pair among them is "in the base already", not removed."""
    before, after = sources_pairs(older), sources_pairs(newer)
    held = sources_pairs(in_base)
    gone = sorted((pk, version) for pk, version in before.items() if pk not in after)
    return BundleDiff(
        added=sorted((pk, version) for pk, version in after.items() if pk not in before),
        removed=[pair for pair in gone if held.get(pair[0]) != pair[1]],
        in_base=[pair for pair in gone if held.get(pair[0]) == pair[1]],
        changed=sorted(
            (pk, before[pk], version) for pk, version in after.items() if pk in before and before[pk] != version
        ),
        unchanged=sum(1 for pk, version in after.items() if before.get(pk) == version),
    )


def manifest_of_bundle(path: Path) -> dict:
    """The manifest of a bundle file (a downloaded zip)."""
    with zipfile.ZipFile(path) as bundle:
        return json.loads(bundle.read("manifest.json"))
