"""The releases named in RELEASES.toml (the repository's list of releases: number, commit, migrations), for the
migration rule and the upgrade drill."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from tests.conftest import REPO

RELEASES_FILE = REPO / "RELEASES.toml"


@dataclass(frozen=True)
class Release:
    number: str
    commit: str
    date: str
    migrations: dict[str, str]  # app label -> the last migration the release has


def releases() -> list[Release]:
    document = tomllib.loads(RELEASES_FILE.read_text())
    return [Release(**entry) for entry in document["release"]]


def release_latest() -> Release:
    """The newest release: the one an upgrade to this code starts from."""
    return releases()[-1]
