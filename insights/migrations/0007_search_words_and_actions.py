"""The search index holds actions as people write them, and words that are words (insights/search_text.py).

``document`` becomes the entry's text in words (actions as their type and values: the box tokens and argument names
of the action syntax were words to the index, so ``box``, ``start`` or ``end`` matched nearly every click); two
columns join it: ``actions`` (the actions in the grammar's plain form, for terms of action syntax such as
``start_box='(500``, which the stored ``<|box_start|>`` tokens hid) and ``correction`` (what the annotator wrote,
which the full-text index now weighs most, in place of the instruction). An action that does not parse gets the
recorded-action facet ``unparsed``.

The full-text index of migration 0006 is made again on the new texts: on PostgreSQL the generated ``document_vector``
(``correction`` at weight A, ``document`` at the default weight) with its GIN index, and a trigram GIN index on
``actions`` beside ``document``'s; on SQLite the FTS5 table with ``head`` the correction and ``body`` the document,
kept by its triggers. Django remakes an SQLite table to add a column, which drops the triggers: the index is dropped
first and made last, after every existing entry's texts and facet types are written again from its annotation."""

from django.db import migrations, models

VECTOR = (
    "setweight(to_tsvector('simple'::regconfig, left(correction, 100000)), 'A') "
    "|| to_tsvector('simple'::regconfig, left(document, 100000))"
)
CREATE_POSTGRESQL = [
    f"ALTER TABLE insights_searchentry ADD COLUMN document_vector tsvector GENERATED ALWAYS AS ({VECTOR}) STORED",
    "CREATE INDEX insights_searchentry_document_fts ON insights_searchentry USING gin (document_vector)",
    "CREATE INDEX IF NOT EXISTS insights_searchentry_actions_trgm ON insights_searchentry "
    "USING gin (actions gin_trgm_ops)",
]
DROP_POSTGRESQL = [
    "DROP INDEX IF EXISTS insights_searchentry_actions_trgm",
    "DROP INDEX IF EXISTS insights_searchentry_document_fts",
    "ALTER TABLE insights_searchentry DROP COLUMN IF EXISTS document_vector",
]
CREATE_SQLITE = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS insights_searchentry_fts USING fts5(head, body, content='')",
    "CREATE TRIGGER IF NOT EXISTS insights_searchentry_fts_insert AFTER INSERT ON insights_searchentry BEGIN "
    "INSERT INTO insights_searchentry_fts(rowid, head, body) VALUES (new.id, new.correction, new.document); END",
    "CREATE TRIGGER IF NOT EXISTS insights_searchentry_fts_delete AFTER DELETE ON insights_searchentry BEGIN "
    "INSERT INTO insights_searchentry_fts(insights_searchentry_fts, rowid, head, body) "
    "VALUES ('delete', old.id, old.correction, old.document); END",
    "CREATE TRIGGER IF NOT EXISTS insights_searchentry_fts_update AFTER UPDATE OF document, correction "
    "ON insights_searchentry BEGIN INSERT INTO insights_searchentry_fts(insights_searchentry_fts, rowid, head, body) "
    "VALUES ('delete', old.id, old.correction, old.document); "
    "INSERT INTO insights_searchentry_fts(rowid, head, body) VALUES (new.id, new.correction, new.document); END",
    "INSERT INTO insights_searchentry_fts(insights_searchentry_fts) VALUES ('delete-all')",
    "INSERT INTO insights_searchentry_fts(rowid, head, body) SELECT id, correction, document FROM insights_searchentry",
]
DROP_SQLITE = [
    "DROP TRIGGER IF EXISTS insights_searchentry_fts_insert",
    "DROP TRIGGER IF EXISTS insights_searchentry_fts_delete",
    "DROP TRIGGER IF EXISTS insights_searchentry_fts_update",
    "DROP TABLE IF EXISTS insights_searchentry_fts",
]


def _run(schema_editor, statements: dict[str, list[str]]) -> None:
    for statement in statements.get(schema_editor.connection.vendor, []):
        schema_editor.execute(statement)


def index_drop(apps, schema_editor):
    _run(schema_editor, {"postgresql": DROP_POSTGRESQL, "sqlite": DROP_SQLITE})


def index_create(apps, schema_editor):
    _run(schema_editor, {"postgresql": CREATE_POSTGRESQL, "sqlite": CREATE_SQLITE})


def texts_rewrite(apps, schema_editor):
    """Every entry's texts and action types made again from its annotation, its trace and its step at τ, by the
    rules the index keeps them with (``search_text.entry_texts``, ``signature.action_type``)."""
    from insights import search_text, signature

    SearchEntry = apps.get_model("insights", "SearchEntry")
    entries = SearchEntry.objects.using(schema_editor.connection.alias).select_related("annotation", "trace", "step")
    fields = ["document", "correction", "actions", "recorded_type", "corrected_type"]
    batch = []
    for entry in entries.order_by("pk").iterator(chunk_size=1000):
        annotation, step = entry.annotation, entry.step
        for name, value in search_text.entry_texts(annotation, step, instruction=entry.trace.instruction).items():
            setattr(entry, name, value)
        entry.recorded_type = signature.action_type(step.action_text) if step else ""
        entry.corrected_type = signature.action_type(annotation.corrected_action)
        batch.append(entry)
        if len(batch) >= 1000:
            SearchEntry.objects.using(schema_editor.connection.alias).bulk_update(batch, fields)
            batch = []
    SearchEntry.objects.using(schema_editor.connection.alias).bulk_update(batch, fields)


def index_of_0006_create(apps, schema_editor):
    """Back to migration 0006: its index on the document alone."""
    import importlib

    importlib.import_module("insights.migrations.0006_search_full_text").forwards(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("insights", "0006_search_full_text")]

    operations = [
        migrations.RunPython(index_drop, index_of_0006_create),
        migrations.AddField(
            model_name="searchentry",
            name="actions",
            field=models.TextField(
                blank=True,
                db_default="",
                default="",
                help_text="The recorded and corrected actions as people write them (plain form).",
            ),
        ),
        migrations.AddField(
            model_name="searchentry",
            name="correction",
            field=models.TextField(
                blank=True,
                db_default="",
                default="",
                help_text="What the annotator wrote, in words: the full-text index weighs it most.",
            ),
        ),
        migrations.AlterField(
            model_name="searchentry",
            name="document",
            field=models.TextField(
                help_text="Instruction, recorded and corrected thoughts, actions in words, notes; lower-case "
                "(insights/search_text.py)."
            ),
        ),
        migrations.RunPython(texts_rewrite, migrations.RunPython.noop),
        migrations.RunPython(index_create, index_drop),
    ]
