"""A migrated PostgreSQL template that every test database is copied from (``CREATE DATABASE … TEMPLATE``), so the
migrations run once, not once per test process and tier.

pytest-django makes each test process's database (``test_<name>_gw0`` …) and migrates it: seconds of CPU for the
studio's migrations, paid by every process of each tier. Instead, the first process to need it migrates a database of
its own, named after the run's database and a digest of every installed app's migration files, and renames it into
place once done, so a template that exists is complete; the test databases are then created from it
(Django's ``TEST['TEMPLATE']``), and Django's own migrate on the copy finds every migration applied. The template
outlives the run: the next tier, or the next run of the same migrations, copies it at once. A change of any
migration file names another template, and the one it replaces (same run database, other digest) is dropped.

Parallel processes build it once: an advisory lock on the server, keyed by the template's name, lets one build while
the others wait. SQLite runs, and ``--nomigrations``, are left as they were."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PREFIX_LIMIT = 40  # PostgreSQL names are at most 63 bytes: the prefix, "_tpl_", a 16-digit digest


def migrations_digest() -> str:
    """A digest of what decides the migrated schema: the installed apps, in order, and every one of their migration
    files (Django's own apps' included)."""
    from django.apps import apps

    digest = hashlib.sha256()
    for app_config in apps.get_app_configs():
        digest.update(f"app {app_config.label}\n".encode())
        folder = Path(app_config.path) / "migrations"
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else ():
            digest.update(f"file {path.relative_to(folder)}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def template_prefix(database_name: str) -> str:
    return f"{database_name[:PREFIX_LIMIT]}_tpl_"


def server_url(settings_dict: dict, database: str) -> str:
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{database}"


def server_connect(settings_dict: dict, database: str | None = None, **options):
    """A psycopg connection of its own to the server of Django's database ``settings_dict`` (to its database, or to
    ``database``), beside Django's: a test's second client, or an administrator's."""
    import psycopg

    return psycopg.connect(server_url(settings_dict, database or settings_dict["NAME"]), **options)


def _migrate(settings_dict: dict, database: str) -> None:
    """Django's migrate on ``database`` in a child process (the test process's own connection stays on its own)."""
    env = {**os.environ, "DATABASE_URL": server_url(settings_dict, database), "STUDIO_DB_POOL": "0"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "--run-syncdb", "-v", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"migrating the test databases' template failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )


def template_ensure(settings_dict: dict) -> str:
    """The name of the migrated template for the database ``settings_dict`` names, built first unless it is there."""
    prefix = template_prefix(settings_dict["NAME"])
    name = f"{prefix}{migrations_digest()}"
    building = f"{name}_building"
    with server_connect(settings_dict, "postgres", autocommit=True) as connection:
        lock_key = int.from_bytes(hashlib.sha256(prefix.encode()).digest()[:8], "big", signed=True)
        connection.execute("SELECT pg_advisory_lock(%s)", [lock_key])
        try:
            existing = {
                row[0]
                for row in connection.execute(
                    "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [prefix]
                ).fetchall()
            }
            if name not in existing:
                connection.execute(f'DROP DATABASE IF EXISTS "{building}"')
                connection.execute(f'CREATE DATABASE "{building}"')
                _migrate(settings_dict, building)
                connection.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
            for stale in sorted(existing - {name}):
                connection.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", [lock_key])
    return name


def test_databases_from_template() -> None:
    """Point the default database's test copy at the migrated template (PostgreSQL only)."""
    from django.conf import settings

    settings_dict = settings.DATABASES["default"]
    if not settings_dict["ENGINE"].endswith("postgresql"):
        return
    settings_dict.setdefault("TEST", {})["TEMPLATE"] = template_ensure(settings_dict)
