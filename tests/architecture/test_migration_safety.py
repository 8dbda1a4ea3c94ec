"""A release's migrations are applied while the previous release still serves (docs/deploy.md, "Upgrading"), so none
of them may drop or rename a column or table that the previous release's models still have: that release's code
would fail on its next read or write of it. Stopping to use a column and dropping it are two releases: the first
removes the field from the models only (``SeparateDatabaseAndState`` with the ``RemoveField`` in its
``state_operations``; the column stays, nullable or with a ``db_default``), the next drops it (``RunSQL``, or a
``RemoveField`` in ``database_operations``).

Nor may a migration add a column that the previous release's INSERTs would fail on: NOT NULL with only Django's
``default`` (kept in Python, not in the database) to a table that release has. Such a column gets a ``db_default``
(or is nullable), in the model too: a field of an abstract base shared by other tables gets it on the one model
that needs it (``studio.models.job_field_with_db_default``), since a ``db_default`` kept out of the models' state
(``SeparateDatabaseAndState``) is lost on SQLite the next time a migration remakes the table from that state.

The rule reads every migration's operations (inside ``SeparateDatabaseAndState`` only those that touch the
database; ``RunSQL`` by its ``DROP``/``RENAME`` statements) for each migration the latest release in RELEASES.toml
did not have, against that release's models (its migrations' state). ``RunPython`` cannot be read: its author
keeps to the rule."""

from __future__ import annotations

import re
import subprocess

import pytest
from django.db import migrations, models
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from tests.conftest import REPO
from tests.releases import Release, release_latest, releases

SQL_DROPS = [
    re.compile(
        r'ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?"?(?P<table>\w+)"?\s+(?P<verb>DROP|RENAME)\s+(?:COLUMN\s+)?'
        r'(?:IF\s+EXISTS\s+)?"?(?P<column>\w+)"?',
        re.IGNORECASE,
    ),
    re.compile(r'DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?"?(?P<table>\w+)"?', re.IGNORECASE),
    re.compile(r'ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?"?(?P<table>\w+)"?\s+RENAME\s+TO', re.IGNORECASE),
]


def database_operations(operations: list[Operation]):
    """The operations that change the database, ``SeparateDatabaseAndState``'s database half included."""
    for operation in operations:
        if isinstance(operation, migrations.SeparateDatabaseAndState):
            yield from database_operations(operation.database_operations)
        else:
            yield operation


def _table(app_label: str, model) -> str:
    return model.options.get("db_table") or f"{app_label}_{model.name_lower}"


def _columns(model) -> set[str]:
    columns = set()
    for name, field in model.fields.items():
        if isinstance(field, models.ManyToManyField):
            continue
        column = field.db_column or (f"{name}_id" if field.is_relation else name)
        columns.add(column.lower())
    return columns


def _sql_texts(operation: migrations.RunSQL) -> list[str]:
    sql = operation.sql
    statements = [sql] if isinstance(sql, str) else list(sql)
    return [statement if isinstance(statement, str) else statement[0] for statement in statements]


def not_writable_by_release(app_label: str, operation: migrations.AddField, models_then) -> bool:
    """Whether ``operation`` adds a column the release's INSERTs leave out and the database cannot fill: NOT NULL
    with no ``db_default`` (Django's ``default`` is the new code's, never the database's), to a table the release
    has. A many-to-many field is a table of its own; a column of a new table is no concern of the release's."""
    field = operation.field
    if (app_label, operation.model_name_lower) not in models_then or field.many_to_many:
        return False
    return not field.null and field.db_default is models.NOT_PROVIDED


def unsafe_operations(app_label: str, migration, released: ProjectState, release: str) -> list[str]:
    """What ``migration`` drops or renames that the models of ``released`` (release ``release``) still use, and the
    columns it adds that those models' INSERTs would fail on."""
    name = f"{app_label}.{migration.name}"
    models_then = released.models
    tables_then = {_table(app, model): model for (app, _), model in models_then.items()}
    problems = []

    def still_used(model_name: str, field_name: str) -> bool:
        model = models_then.get((app_label, model_name.lower()))
        return model is not None and field_name.lower() in {field.lower() for field in model.fields}

    for operation in database_operations(migration.operations):
        if isinstance(operation, migrations.AddField) and not_writable_by_release(app_label, operation, models_then):
            problems.append(
                f"{name} adds {operation.model_name}.{operation.name} NOT NULL without a db_default to a table "
                f"release {release} inserts into without it"
            )
        elif isinstance(operation, migrations.RemoveField) and still_used(operation.model_name, operation.name):
            problems.append(f"{name} drops {operation.model_name}.{operation.name}, which release {release} uses")
        elif isinstance(operation, migrations.RenameField) and still_used(operation.model_name, operation.old_name):
            problems.append(f"{name} renames {operation.model_name}.{operation.old_name}, which release {release} uses")
        elif isinstance(operation, migrations.DeleteModel) and (app_label, operation.name_lower) in models_then:
            problems.append(f"{name} drops the table of {operation.name}, which release {release} uses")
        elif isinstance(operation, migrations.RenameModel):
            model = models_then.get((app_label, operation.old_name_lower))
            if model is not None and not model.options.get("db_table"):
                problems.append(f"{name} renames the table of {operation.old_name}, which release {release} uses")
        elif isinstance(operation, migrations.AlterModelTable):
            model = models_then.get((app_label, operation.name_lower))
            if model is not None and _table(app_label, model) != (
                operation.table or f"{app_label}_{operation.name_lower}"
            ):
                problems.append(f"{name} renames the table of {operation.name}, which release {release} uses")
        elif isinstance(operation, migrations.RunSQL):
            for statement in _sql_texts(operation):
                for pattern in SQL_DROPS:
                    for match in pattern.finditer(statement):
                        model = tables_then.get(match["table"].lower())
                        if model is None:
                            continue
                        column = match.groupdict().get("column")
                        if column is None or column.lower() in _columns(model):
                            what = f"{match['table']}.{column}" if column else f"the table {match['table']}"
                            problems.append(f"{name} drops or renames {what} in SQL, which release {release} uses")
    return problems


@pytest.fixture(scope="module")
def loader() -> MigrationLoader:
    return MigrationLoader(None, ignore_no_migrations=True)


def released_state(loader: MigrationLoader, release: Release) -> tuple[ProjectState, set[tuple[str, str]]]:
    leaves = [(app, name) for app, name in release.migrations.items()]
    had = {node for leaf in leaves for node in loader.graph.forwards_plan(leaf)}
    return loader.project_state(leaves, at_end=True), had


def test_no_migration_since_the_latest_release_breaks_what_that_release_uses(loader):
    release = release_latest()
    state, had = released_state(loader, release)
    problems = [
        problem
        for key, migration in sorted(loader.disk_migrations.items())
        if key not in had
        for problem in unsafe_operations(key[0], migration, state, release.number)
    ]
    assert problems == []


def test_the_rule_refuses_a_drop_or_rename_of_a_used_column_and_allows_the_two_release_way(loader):
    """The control: each way of dropping or renaming a column the release uses is refused; the state-only removal,
    and dropping a column the release never had, are not."""
    state, _ = released_state(loader, release_latest())

    def problems(*operations):
        migration = migrations.Migration("9999_candidate", "traces")
        migration.operations = list(operations)
        return unsafe_operations("traces", migration, state, "0.35")

    assert problems(migrations.RemoveField("trace", "instruction")) == [
        "traces.9999_candidate drops trace.instruction, which release 0.35 uses"
    ]
    assert problems(migrations.RenameField("trace", "instruction", "task"))
    assert problems(migrations.DeleteModel("Round"))
    assert problems(migrations.RenameModel("Round", "Run"))
    assert problems(migrations.AlterModelTable("round", "traces_run"))
    assert problems(migrations.RunSQL('ALTER TABLE "traces_trace" DROP COLUMN "instruction"'))
    assert problems(migrations.RunSQL(["ALTER TABLE traces_step RENAME COLUMN thought TO thinking"]))
    assert problems(migrations.RunSQL("DROP TABLE IF EXISTS traces_round"))
    assert problems(
        migrations.SeparateDatabaseAndState(database_operations=[migrations.RemoveField("trace", "instruction")])
    )
    # The first half of the two-release way: the models stop using the column, the database keeps it.
    assert (
        problems(migrations.SeparateDatabaseAndState(state_operations=[migrations.RemoveField("trace", "instruction")]))
        == []
    )
    # A column the release never had (added and dropped since), and SQL about other tables.
    assert problems(migrations.RemoveField("trace", "added_since"), migrations.RunSQL("DROP TABLE scratch_table")) == []
    assert problems(migrations.RunSQL('ALTER TABLE "traces_trace" DROP COLUMN "added_since"')) == []


def test_the_rule_refuses_a_not_null_column_the_release_cannot_insert_and_allows_one_with_a_database_default(loader):
    """The control: a NOT NULL column with only Django's ``default`` added to a table the release has is refused
    (also as ``SeparateDatabaseAndState``'s database half); with a ``db_default``, nullable, many-to-many, only in
    the models' state, or on a model the release never had, it is allowed."""
    state, _ = released_state(loader, release_latest())

    def problems(*operations):
        migration = migrations.Migration("9999_candidate", "traces")
        migration.operations = list(operations)
        return unsafe_operations("traces", migration, state, "0.35")

    def added(model_name: str, field) -> migrations.AddField:
        return migrations.AddField(model_name, "priority", field)

    assert problems(added("trace", models.IntegerField(default=0))) == [
        "traces.9999_candidate adds trace.priority NOT NULL without a db_default to a table release 0.35 inserts "
        "into without it"
    ]
    assert problems(added("trace", models.JSONField(default=list)))
    assert problems(migrations.SeparateDatabaseAndState(database_operations=[added("trace", models.TextField())]))
    assert problems(added("trace", models.IntegerField(default=0, db_default=0))) == []
    assert problems(added("trace", models.IntegerField(null=True))) == []
    assert problems(added("trace", models.ManyToManyField("auth.User"))) == []
    assert (
        problems(migrations.SeparateDatabaseAndState(state_operations=[added("trace", models.IntegerField(default=0))]))
        == []
    )
    # A table made since the release: the release never inserts into it.
    assert problems(added("addedsince", models.IntegerField(default=0))) == []


def test_the_releases_file_names_each_release_s_migrations_as_its_commit_has_them():
    """RELEASES.toml says which migrations each release had; where this clone has the commit, its tree agrees."""
    for release in releases():
        assert re.fullmatch(r"0\.\d+", release.number) and re.fullmatch(r"[0-9a-f]{40}", release.commit), release
        listed = subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", release.commit],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if listed.returncode != 0:
            continue  # a clone without the release's history: the file is all there is
        last: dict[str, str] = {}
        for path in listed.stdout.splitlines():
            parts = path.split("/")
            if len(parts) == 3 and parts[1] == "migrations" and re.match(r"\d{4}_\w+\.py$", parts[2]):
                last[parts[0]] = max(last.get(parts[0], ""), parts[2].removesuffix(".py"))
        assert release.migrations == last, release.number
