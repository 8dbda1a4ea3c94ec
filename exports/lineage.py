"""Bundle lineage: which annotation versions a bundle holds, and what changed between two bundles.

A bundle's sources are the (annotation id, version) pairs it was built from (its manifest's ``sources``, kept on the
export job too). An annotation whose version moved between two bundles was edited (re-reviewed, re-adjudicated) in
between, so its samples may differ; one missing from the newer bundle was rejected, re-opened or replaced by
another answer on its trace. Pure functions: no database, so the management command also diffs downloaded bundles.
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

    def to_json(self) -> dict:
        return {
            "added": [{"annotation_id": pk, "version": version} for pk, version in self.added],
            "removed": [{"annotation_id": pk, "version": version} for pk, version in self.removed],
            "changed": [{"annotation_id": pk, "from_version": old, "to_version": new} for pk, old, new in self.changed],
            "unchanged": self.unchanged,
        }


def sources_pairs(sources: Iterable) -> dict[int, int]:
    """{annotation id: version} from a manifest's ``sources`` (dicts) or stored pairs (lists)."""
    pairs: dict[int, int] = {}
    for item in sources:
        pk, version = (item["annotation_id"], item["version"]) if isinstance(item, dict) else item
        pairs[int(pk)] = int(version)
    return pairs


def bundle_diff(older: Iterable, newer: Iterable) -> BundleDiff:
    """What ``newer`` holds that ``older`` did not, what it lost, and which annotations moved to another version."""
    before, after = sources_pairs(older), sources_pairs(newer)
    return BundleDiff(
        added=sorted((pk, version) for pk, version in after.items() if pk not in before),
        removed=sorted((pk, version) for pk, version in before.items() if pk not in after),
        changed=sorted(
            (pk, before[pk], version) for pk, version in after.items() if pk in before and before[pk] != version
        ),
        unchanged=sum(1 for pk, version in after.items() if before.get(pk) == version),
    )


def manifest_of_bundle(path: Path) -> dict:
    """The manifest of a bundle file (a downloaded zip)."""
    with zipfile.ZipFile(path) as bundle:
        return json.loads(bundle.read("manifest.json"))
