"""The upgrade drill (docs/deploy.md, "Upgrading"): the latest release in RELEASES.toml is checked out with
``git worktree``, migrates a PostgreSQL database of its own and makes data through its own code
(tests/serving/upgrade_world.py: people, a project, imported traces, an accepted annotation, a draft, a bundle);
this checkout's migrations are applied while that release still serves (after them its code claims a trace, hands
in the answer, which it indexes for search, and starts a clustering run: inserts into tables the migrations add
columns to, which fail on a NOT NULL column without a database default), then this code hands in the draft saved before the upgrade and exports again. Every table the release had keeps its
rows, and the two bundles hold the same samples.

The release's checkout runs on this checkout's virtualenv when that satisfies every dependency the release's
pyproject names (a later release may add packages: the release does not import them); otherwise the test skips,
naming what is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import REPO, TEST_PASSWORD
from tests.factories import native_trace_folder
from tests.releases import release_latest
from tests.serving.test_backup_drill import ROW_COUNTS
from tests.stack import postgres_server_url

pytestmark = [pytest.mark.fullstack]

WORLD = Path(__file__).with_name("upgrade_world.py")
# Rows Django itself adds on migrate (its record of migrations, the new models' content types and permissions).
GROWN_BY_MIGRATE = {"django_migrations", "django_content_type", "auth_permission"}


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)


def unmet_requirements(pyproject: str) -> list[str]:
    """The release's dependencies (pyproject's ``dependencies``) that this virtualenv does not satisfy."""
    unmet = []
    for line in tomllib.loads(pyproject)["project"]["dependencies"]:
        requirement = Requirement(line)
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            unmet.append(f"{requirement.name} (not installed)")
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            unmet.append(f"{requirement} ({installed} installed)")
    return unmet


@pytest.fixture
def release_checkout(tmp_path):
    release = release_latest()
    if git("cat-file", "-e", f"{release.commit}^{{commit}}").returncode != 0:
        pytest.skip(f"this clone lacks release {release.number}'s commit {release.commit[:12]} (a shallow clone?)")
    unmet = unmet_requirements(git("show", f"{release.commit}:pyproject.toml").stdout)
    if unmet:
        pytest.skip(f"release {release.number} needs a virtualenv of its own: this one lacks {', '.join(unmet)}")
    checkout = tmp_path / f"release-{release.number}"
    added = git("worktree", "add", "--detach", str(checkout), release.commit)
    assert added.returncode == 0, added.stderr
    try:
        yield release, checkout
    finally:
        git("worktree", "remove", "--force", str(checkout))


def test_the_previous_release_s_data_survives_the_upgrade_and_works(release_checkout, tmp_path):
    release, checkout = release_checkout
    server = postgres_server_url()
    if server is None or not shutil.which("psql"):
        pytest.skip("the upgrade drill needs a PostgreSQL server (DATABASE_URL or 127.0.0.1:5432) and psql")
    database = f"upgrade_{os.getpid()}"
    base = server.rsplit("/", 1)[0]
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "STUDIO_MODE": "dev",
        "DATABASE_URL": f"{base}/{database}",
        "STUDIO_DATA_DIR": str(tmp_path / "data"),
        "STUDIO_STORAGE": "local",
        "UPGRADE_PASSWORD": TEST_PASSWORD,
    }

    def psql(sql: str, db: str = "postgres") -> str:
        return subprocess.run(
            ["psql", f"{base}/{db}", "-qAtc", " ".join(sql.split())], check=True, capture_output=True, text=True
        ).stdout

    def run(code: Path, *args: str) -> str:
        done = subprocess.run([sys.executable, *args], cwd=code, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{code.name}: {' '.join(args)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def world(code: Path, *args: str) -> dict:
        return json.loads(run(code, str(WORLD), *args).strip().splitlines()[-1])

    def rows() -> dict[str, int]:
        return {name: int(n) for name, n in (line.split("|") for line in psql(ROW_COUNTS, database).splitlines())}

    traces = tmp_path / "traces"
    for n in range(4):
        native_trace_folder(traces / f"up-{n}", external_id=f"up-{n}", steps=3, size=(1280, 800))
    psql(f'drop database if exists "{database}"')
    psql(f'create database "{database}"')
    try:
        imported_from = run(checkout, "-c", "import studio, traces; print(studio.__file__, traces.__file__)").split()
        assert all(Path(path).is_relative_to(checkout) for path in imported_from), imported_from  # the release's code
        run(checkout, "manage.py", "migrate", "--noinput")
        made = world(checkout, "before", str(traces), str(tmp_path / "before.zip"))
        rows_before = rows()
        assert rows_before["traces_trace"] == 4 and rows_before["exports_exportjob"] == 1

        # docs/deploy.md, "Upgrading": a backup (the new release's command reads an older release's database), then
        # the new release's migrations, while the previous release serves.
        assert "stored files to" in run(REPO, "manage.py", "backup", str(tmp_path / "before-upgrade.tar"))
        run(REPO, "manage.py", "migrate", "--noinput")
        rows_migrated = rows()
        changed = {table for table in rows_before if rows_migrated.get(table) != rows_before[table]}
        assert changed <= GROWN_BY_MIGRATE, {table: (rows_before[table], rows_migrated.get(table)) for table in changed}
        served = world(checkout, "serving")
        assert served["serving_submitted_status"] == "submitted", served
        rows_served = rows()
        assert rows_served["annotation_annotation"] == rows_migrated["annotation_annotation"] + 1
        assert rows_served["insights_searchentry"] == rows_migrated["insights_searchentry"] + 1
        assert rows_served["insights_clusterrun"] == rows_migrated["insights_clusterrun"] + 1
        run(REPO, "manage.py", "search_index_rebuild")
        assert rows()["annotation_auditevent"] > rows_migrated["annotation_auditevent"]  # the old code's saves

        done = world(REPO, "after", str(made["draft"]), str(made["draft_version"]), str(tmp_path / "after.zip"))
        assert done["submitted_status"] == "submitted", done
        assert served["serving_draft"] not in (made["draft"], made["accepted"])
    finally:
        psql(f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{database}'")
        psql(f'drop database if exists "{database}"')
    assert samples(tmp_path / "before.zip") == samples(tmp_path / "after.zip") != []


def samples(bundle: Path) -> list[dict]:
    """Every sample of a bundle's data files, in order of file and line."""
    with zipfile.ZipFile(bundle) as archive:
        return [
            json.loads(line)
            for name in sorted(archive.namelist())
            if name.startswith("data/") and name.endswith(".jsonl")
            for line in archive.read(name).decode().splitlines()
            if line.strip()
        ]
