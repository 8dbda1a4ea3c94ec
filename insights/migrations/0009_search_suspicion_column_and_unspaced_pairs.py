"""Two costs of a search over many entries taken out of the query.

The pre-score suspicion of the step at τ becomes a column of the entry (``suspicion``), kept by the database: a
trigger on the step suggestions writes the latest suspicion of each step they touch into that step's entries, on
insert, update and delete (a statement's rows at once on PostgreSQL, a row at a time on SQLite), and
``search_entry_refresh`` writes it with the entry. Read at query time it was a subquery per matching row, three times
over in the facet's CASE: most of a facet count's time at tens of thousands of matches.

On PostgreSQL, each document's pairs of characters of the scripts written without spaces, a stored generated column
``document_pairs`` (``insights_unspaced_bigrams``, the class of ``search_text.UNSPACED`` as it is now; the model does
not declare it) with a GIN index: the trigram indexes need three characters, so a two-character Chinese word
scanned every entry; its pair now finds the entries that may hold it, which the LIKE then checks."""

from django.db import migrations, models

UNSPACED = r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
LATEST = (
    "(SELECT s.suspicion FROM traces_stepsuggestion s WHERE s.step_id = insights_searchentry.step_id "
    "ORDER BY s.created_at DESC, s.id DESC LIMIT 1)"
)
FILL = f"UPDATE insights_searchentry SET suspicion = {LATEST} WHERE step_id IS NOT NULL"

# A suggestion moved to another step changes the latest of both steps: an update refreshes the steps of its old and new rows.
PG_TRIGGERS = (
    ("insert", "INSERT", "NEW"),
    ("update_new", "UPDATE", "NEW"),
    ("update_old", "UPDATE", "OLD"),
    ("delete", "DELETE", "OLD"),
)
SQLITE_TRIGGERS = (
    ("insert", "INSERT", "new"),
    ("update_new", "UPDATE OF suspicion, step_id", "new"),
    ("update_old", "UPDATE OF suspicion, step_id", "old"),
    ("delete", "DELETE", "old"),
)
CREATE_POSTGRESQL = [
    "CREATE INDEX IF NOT EXISTS traces_stepsuggestion_step_latest ON traces_stepsuggestion "
    "(step_id, created_at DESC, id DESC)",
    "CREATE OR REPLACE FUNCTION insights_searchentry_suspicion_refresh() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN UPDATE insights_searchentry SET suspicion = {LATEST} "
    "WHERE step_id IN (SELECT DISTINCT step_id FROM changed); RETURN NULL; END $$",
    *(
        f"CREATE TRIGGER insights_searchentry_suspicion_{name} AFTER {event} ON traces_stepsuggestion "
        f"REFERENCING {table} TABLE AS changed FOR EACH STATEMENT "
        "EXECUTE FUNCTION insights_searchentry_suspicion_refresh()"
        for name, event, table in PG_TRIGGERS
    ),
    FILL,
    "CREATE OR REPLACE FUNCTION insights_unspaced_bigrams(value text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT "
    "PARALLEL SAFE AS $$ SELECT coalesce(array_agg(DISTINCT substr(run[1], i, 2)), '{}') "
    f"FROM regexp_matches(value, '([{UNSPACED}]{{2,}})', 'g') AS run, generate_series(1, length(run[1]) - 1) AS i $$",
    # A stored column, not an expression index: a search reads the pairs of every entry the index offers (its
    # filter keeps the condition), and computing them again there cost 0.3 ms a Chinese entry.
    "ALTER TABLE insights_searchentry ADD COLUMN document_pairs text[] "
    "GENERATED ALWAYS AS (insights_unspaced_bigrams(document)) STORED",
    "CREATE INDEX IF NOT EXISTS insights_searchentry_document_pairs ON insights_searchentry USING gin (document_pairs)",
]
DROP_POSTGRESQL = [
    "DROP INDEX IF EXISTS insights_searchentry_document_pairs",
    "ALTER TABLE insights_searchentry DROP COLUMN IF EXISTS document_pairs",
    "DROP FUNCTION IF EXISTS insights_unspaced_bigrams(text)",
    *(
        f"DROP TRIGGER IF EXISTS insights_searchentry_suspicion_{name} ON traces_stepsuggestion"
        for name, _, _ in PG_TRIGGERS
    ),
    "DROP FUNCTION IF EXISTS insights_searchentry_suspicion_refresh()",
    "DROP INDEX IF EXISTS traces_stepsuggestion_step_latest",
]
_SQLITE_LATEST = LATEST.replace("insights_searchentry.step_id", "{row}.step_id")
CREATE_SQLITE = [
    "CREATE INDEX IF NOT EXISTS traces_stepsuggestion_step_latest ON traces_stepsuggestion "
    "(step_id, created_at DESC, id DESC)",
    *(
        f"CREATE TRIGGER IF NOT EXISTS insights_searchentry_suspicion_{name} AFTER {event} "
        f"ON traces_stepsuggestion BEGIN UPDATE insights_searchentry SET suspicion = "
        f"{_SQLITE_LATEST.format(row=row)} WHERE step_id = {row}.step_id; END"
        for name, event, row in SQLITE_TRIGGERS
    ),
    FILL,
]
DROP_SQLITE = [
    *(f"DROP TRIGGER IF EXISTS insights_searchentry_suspicion_{name}" for name, _, _ in SQLITE_TRIGGERS),
    "DROP INDEX IF EXISTS traces_stepsuggestion_step_latest",
]


def _run(schema_editor, statements: dict[str, list[str]]) -> None:
    for statement in statements.get(schema_editor.connection.vendor, []):
        schema_editor.execute(statement)


def forwards(apps, schema_editor):
    _run(schema_editor, {"postgresql": CREATE_POSTGRESQL, "sqlite": CREATE_SQLITE})


def backwards(apps, schema_editor):
    _run(schema_editor, {"postgresql": DROP_POSTGRESQL, "sqlite": DROP_SQLITE})


class Migration(migrations.Migration):
    dependencies = [("insights", "0008_cluster_run_job"), ("prescoring", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="searchentry",
            name="suspicion",
            field=models.FloatField(
                help_text="The pre-score suspicion of the step at τ, from its latest scoring (none: never scored); "
                "kept by triggers on the step suggestions (migration 0009) and by search_entry_refresh.",
                null=True,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
