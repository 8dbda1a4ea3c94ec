"""Full-text search over ``SearchEntry.document``, kept by the database itself, existing entries included.

PostgreSQL: a stored generated ``tsvector`` column (``document_vector``; the model does not declare it, Django never
reads or writes it) with a GIN index: the document's first line (the trace's instruction) at weight A, the whole
document at the default weight, ``simple`` configuration (no stemming, no stop words: the text mixes languages and
action syntax). Only the first 100,000 characters are vectorised: a tsvector holds at most 1 MB, and a save must
never fail on a long note (the trigram LIKE of migration 0002 still sees the whole text).

SQLite: a contentless FTS5 table (``insights_searchentry_fts``: ``head`` the first line, ``body`` the whole
document, rowid the entry's id) kept by three triggers. Django remakes an SQLite table to alter one of its columns
(a copy under a new name): the triggers go with the old table, so a later migration that alters
``insights_searchentry`` on SQLite must run ``CREATE_SQLITE`` again (tests/insights/test_search_ranking.py fails otherwise).

Both fill the index from the rows already there. ``selectors.search`` queries them."""

from django.db import migrations

VECTOR = (
    "setweight(to_tsvector('simple'::regconfig, split_part(left(document, 100000), E'\\n', 1)), 'A') "
    "|| to_tsvector('simple'::regconfig, left(document, 100000))"
)
CREATE_POSTGRESQL = [
    f"ALTER TABLE insights_searchentry ADD COLUMN document_vector tsvector GENERATED ALWAYS AS ({VECTOR}) STORED",
    "CREATE INDEX insights_searchentry_document_fts ON insights_searchentry USING gin (document_vector)",
]
DROP_POSTGRESQL = [
    "DROP INDEX IF EXISTS insights_searchentry_document_fts",
    "ALTER TABLE insights_searchentry DROP COLUMN IF EXISTS document_vector",
]


def _head(row: str) -> str:
    # The first line: ``|| char(10)`` gives a document of one line a newline to stop at.
    return f"substr({row}.document, 1, instr({row}.document || char(10), char(10)) - 1)"


CREATE_SQLITE = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS insights_searchentry_fts USING fts5(head, body, content='')",
    "CREATE TRIGGER IF NOT EXISTS insights_searchentry_fts_insert AFTER INSERT ON insights_searchentry BEGIN "
    f"INSERT INTO insights_searchentry_fts(rowid, head, body) VALUES (new.id, {_head('new')}, new.document); END",
    "CREATE TRIGGER IF NOT EXISTS insights_searchentry_fts_delete AFTER DELETE ON insights_searchentry BEGIN "
    "INSERT INTO insights_searchentry_fts(insights_searchentry_fts, rowid, head, body) "
    f"VALUES ('delete', old.id, {_head('old')}, old.document); END",
    "CREATE TRIGGER IF NOT EXISTS insights_searchentry_fts_update AFTER UPDATE OF document ON insights_searchentry "
    "BEGIN INSERT INTO insights_searchentry_fts(insights_searchentry_fts, rowid, head, body) "
    f"VALUES ('delete', old.id, {_head('old')}, old.document); "
    f"INSERT INTO insights_searchentry_fts(rowid, head, body) VALUES (new.id, {_head('new')}, new.document); END",
    # A contentless table is emptied by 'delete-all', then filled from the rows already there.
    "INSERT INTO insights_searchentry_fts(insights_searchentry_fts) VALUES ('delete-all')",
    "INSERT INTO insights_searchentry_fts(rowid, head, body) "
    f"SELECT id, {_head('insights_searchentry')}, document FROM insights_searchentry",
]
DROP_SQLITE = [
    "DROP TRIGGER IF EXISTS insights_searchentry_fts_insert",
    "DROP TRIGGER IF EXISTS insights_searchentry_fts_delete",
    "DROP TRIGGER IF EXISTS insights_searchentry_fts_update",
    "DROP TABLE IF EXISTS insights_searchentry_fts",
]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in CREATE_POSTGRESQL if vendor == "postgresql" else CREATE_SQLITE if vendor == "sqlite" else []:
        schema_editor.execute(statement)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in DROP_POSTGRESQL if vendor == "postgresql" else DROP_SQLITE if vendor == "sqlite" else []:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("insights", "0005_cluster_run_representation")]

    operations = [migrations.RunPython(forwards, backwards)]
