"""On PostgreSQL, a trigram GIN index on the search text: ``document LIKE '%term%'`` (the search's one text
predicate, the same on every database) reads the index instead of every row. SQLite has no such index; the embedded
default scans the table, fast enough at its sizes (bench/search.py)."""

from django.db import migrations

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS insights_searchentry_document_trgm "
    "ON insights_searchentry USING gin (document gin_trgm_ops)",
]
DROP = ["DROP INDEX IF EXISTS insights_searchentry_document_trgm"]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("insights", "0001_search_slices_clusters")]

    operations = [migrations.RunPython(forwards, backwards)]
