"""Database helpers: retrying a write transaction that SQLite refused because another writer held the lock; one-row
reads, updates and inserts compiled to SQL once, and the cursor that runs them (prepared on PostgreSQL)."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

from django.db import OperationalError, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Field, Model, QuerySet
from django.db.transaction import TransactionManagementError

LOCK_RETRIES = 8


def _is_lock_error(exc: OperationalError) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text


P = ParamSpec("P")
R = TypeVar("R")


def atomic_with_retry(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` in one transaction; on SQLite's lock error roll back, wait and run it again.

    The busy timeout already waits for the lock; this is the last line so that `database is
    locked` never reaches a user even when a long writer outlasts the timeout.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return fn(*args, **kwargs)  # the outer transaction owns the retry
        for attempt in range(LOCK_RETRIES):
            try:
                with transaction.atomic():
                    return fn(*args, **kwargs)
            except OperationalError as exc:
                if connection.vendor != "sqlite" or not _is_lock_error(exc) or attempt == LOCK_RETRIES - 1:
                    raise
                time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    return wrapper


# --- The cursor of the compiled statements ---------------------------------------------------------------------------


def statement_cursor(connection: BaseDatabaseWrapper) -> CursorWrapper:
    """``connection.cursor()`` for a statement of a fixed shape run on every request (the compiled reads and writes
    below): on PostgreSQL its values travel apart from the SQL (server-side binding), so psycopg can prepare it.

    Django's PostgreSQL cursor binds each value into the SQL text in Python (psycopg's client-side binding), and
    PostgreSQL then parses and plans the statement anew on every call. With the values sent apart, psycopg prepares
    a statement on a connection once it has run it ``prepare_threshold`` times there (the database's OPTIONS; None
    prepares nothing), and each later run is one bind and execute of the prepared plan. Only these statements are
    run so: server-side binding for every query would refuse some of the ORM's (a value both in SELECT and in GROUP
    BY). The cursor is Django's wrapper all the same (``execute_wrapper``s, query logging, error translation,
    ``CONN_HEALTH_CHECKS``). A connection PostgreSQL dropped comes back as a new one, with nothing prepared; psycopg
    forgets what it prepared after a ROLLBACK, DROP, ALTER or DEALLOCATE ALL run through it, and PostgreSQL re-plans
    a prepared statement whose tables changed.
    """
    if connection.vendor != "postgresql" or connection.settings_dict["OPTIONS"].get("server_side_binding") is True:
        return connection.cursor()
    from django.db.backends.postgresql.base import TIMESTAMPTZ_OID, ServerBindingCursor
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg.pq import Format

    # What connection.cursor() runs, with psycopg's server-side binding cursor in place of Django's default.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        raw = connection.connection
        cursor = ServerBindingCursor(raw)  # type: ignore[call-arg]  # psycopg's cursor takes its connection; the stubs say otherwise
        if connection.timezone != raw.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT).timezone:
            register_tzloader(connection.timezone, cursor)
        connection.validate_thread_sharing()
        if connection.queries_logged:
            return _logged_statement_cursor(cursor, connection)
        return connection.make_cursor(cursor)  # type: ignore[arg-type]  # it wraps the driver's cursor; the stubs say a wrapper


def _logged_statement_cursor(cursor: Any, connection: BaseDatabaseWrapper) -> CursorWrapper:
    """Django's debug cursor, logging each statement with its values in it as Django's own cursor logs it (Django
    reads a client-side bound query back from the cursor, which a server-side bound one does not keep)."""
    from django.db.backends.postgresql.base import CursorDebugWrapper
    from django.db.backends.utils import CursorWrapper

    class LoggedStatementCursor(CursorDebugWrapper):
        def execute(self, sql: Any, params: Any = None) -> Any:
            with self.debug_sql(self.db.ops.compose_sql(sql, params)):
                return CursorWrapper.execute(self, sql, params)

    return LoggedStatementCursor(cursor, connection)


# --- Reads compiled once ---------------------------------------------------------------------------------------------


class OneRowRead:
    """A one-row read whose SQL the ORM builds once per database connection; each call binds its values and makes
    the model (with its ``select_related`` objects) from the row as the ORM does.

    Building a queryset and compiling it costs the ORM several times what the database spends answering it, and a
    request's hottest reads (the access check with its row lock, the session) have the same few shapes every time.
    ``build(slots)`` returns the queryset with ``slots[name]`` where each value goes; ``slots`` names the field each
    value is checked against (its Python type, its column's range: a value out of range finds nothing, as the ORM
    answers). Only a queryset of model rows with ``select_related`` (no prefetch) can be compiled: anything else is
    refused when it is first built. The compiled read is kept on the thread's connection, so it never crosses
    threads, and it follows a reconnect (the connection object stays the thread's).
    """

    def __init__(self, build: Callable[[dict[str, Any]], QuerySet[Any]], slots: dict) -> None:
        self.build = build
        self.slots = slots
        self.alias: str | None = None  # the database the queryset reads from (its router's answer), once built

    def first(self, **values: Any) -> Any:  # a row of the model the queryset reads
        """The row's model for ``values``, or None. TypeError / ValueError for a value its field cannot take."""
        if self.alias is None:
            self.alias = self.build(_Placeholders(self.slots)).db
        connection = connections[self.alias]
        prepared = {}
        for name, field in self.slots.items():
            value = field.get_prep_value(values[name])
            if isinstance(value, int) and not _in_range(value, field, connection):
                return None  # no row has it (the ORM answers an empty result, without a query)
            prepared[name] = value
        cache = connection.__dict__.setdefault("_studio_compiled_reads", {})
        compiled = cache.get(self)
        if compiled is None:
            compiled = cache[self] = _CompiledRead(self.build(_Placeholders(self.slots)), self.slots, connection)
        return compiled.run(prepared)


def _in_range(value: int, field: Field, connection: BaseDatabaseWrapper) -> bool:
    target = getattr(field, "target_field", field)
    try:
        low, high = connection.ops.integer_field_range(target.get_internal_type())
    except KeyError:
        return True
    return (low is None or value >= low) and (high is None or value <= high)


class _Placeholders(dict):
    """Stand-ins for the values of a compiled read: numbers and texts no real value has, found again in the SQL's
    parameters after compiling."""

    def __init__(self, slots: dict):
        super().__init__()
        for i, (name, field) in enumerate(slots.items()):
            numeric = getattr(field, "target_field", field).get_internal_type() in _NUMERIC
            self[name] = -2_000_000_000 - i if numeric else f"\x1fslot {i}\x1f"


_NUMERIC = {
    "AutoField",
    "BigAutoField",
    "SmallAutoField",
    "IntegerField",
    "BigIntegerField",
    "SmallIntegerField",
    "PositiveIntegerField",
    "PositiveBigIntegerField",
    "PositiveSmallIntegerField",
}


class _CompiledRead:
    def __init__(self, queryset: Any, slots: dict, connection: BaseDatabaseWrapper) -> None:
        # Any: a QuerySet, read by the ORM's private attributes (_iterable_class, ...) that the stubs leave out.
        from django.db.models.query import ModelIterable, get_related_populators

        if (
            queryset._iterable_class is not ModelIterable
            or queryset._prefetch_related_lookups
            or queryset._known_related_objects
        ):
            raise ValueError("only a queryset of model rows with select_related can be compiled once")
        self.connection = connection
        features = connection.features
        self.locks = bool(queryset.query.select_for_update) and features.has_select_for_update
        self.locks = self.locks and features.supports_transactions
        compiler = queryset.query.get_compiler(connection=connection)
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        placeholders = _Placeholders(slots)
        self.positions = [
            (i, name) for i, param in enumerate(self.params) for name, ph in placeholders.items() if param == ph
        ]
        if {name for _, name in self.positions} != set(slots):
            raise ValueError("a value of the compiled read is not a parameter of its SQL")
        self.compiler = compiler
        self.columns = [s[0] for s in compiler.select[: compiler.col_count]]
        self.converters = compiler.get_converters(self.columns)
        klass_info = compiler.klass_info
        self.model = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self.model_columns = slice(start, end)
        self.init_list = [f[0].target.attname for f in compiler.select[start:end]]
        # Django 5.2's signature; the stubs describe a later Django's (with fetch_mode).
        self.related = get_related_populators(klass_info, compiler.select, connection.alias)  # type: ignore[call-arg]
        self.annotations = compiler.annotation_col_map

    def run(self, values: dict) -> Model | None:
        if self.locks and self.connection.get_autocommit():  # as the ORM refuses it
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(self.params)
        for i, name in self.positions:
            params[i] = values[name]
        with statement_cursor(self.connection) as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        if self.converters:
            (row,) = self.compiler.apply_converters([row], self.converters)
        obj = self.model.from_db(self.connection.alias, self.init_list, row[self.model_columns])
        for populator in self.related:
            populator.populate(row, obj)
        for name, position in (self.annotations or {}).items():
            setattr(obj, name, row[position])
        return obj


# --- Writes compiled once --------------------------------------------------------------------------------------------


def row_update(obj: Model, update_fields: Iterable[str]) -> None:
    """``obj.save(update_fields=update_fields)``, its UPDATE compiled to SQL once per model, fields and connection.

    Django's save builds and compiles an UPDATE query on every call, several times the database's own work for a
    one-row write. This does what that save does, in its order: the ``pre_save`` signal with the same arguments,
    each field's ``pre_save`` (``auto_now`` stamps) and database value, the UPDATE by primary key (refused with the
    ORM's DatabaseError when no row matched), the instance's state, the ``post_save`` signal (``created=False``,
    ``update_fields`` as a frozenset). What it cannot compile as that save does (an inherited or proxy model, a
    relation or an expression among the values) is saved by the ORM."""
    from django.db import DatabaseError, router
    from django.db.models.signals import post_save, pre_save

    model = type(obj)
    meta = model._meta
    update_fields = frozenset(update_fields)
    unknown = update_fields.difference(meta._non_pk_concrete_field_names)  # type: ignore[attr-defined]  # private, not in the stubs
    if unknown:  # the ORM's refusal, in its words
        raise ValueError(
            "The following fields do not exist in this model, are m2m fields, primary keys, or are non-concrete "
            f"fields: {', '.join(unknown)}"
        )
    fields = [f for f in meta.local_concrete_fields if f.name in update_fields or f.attname in update_fields]
    if (
        meta.proxy
        or meta.parents
        or meta.auto_created
        or not update_fields
        or obj.pk is None
        or any(f.is_relation or f.generated or f.primary_key for f in fields)
        or any(hasattr(getattr(obj, f.attname), "resolve_expression") for f in fields)
    ):
        obj.save(update_fields=update_fields)
        return
    using = router.db_for_write(model, instance=obj)
    connection = connections[using]
    pre_save.send(sender=model, instance=obj, raw=False, using=using, update_fields=update_fields)
    with transaction.mark_for_rollback_on_error(using=using):
        values = [f.pre_save(obj, False) for f in fields]
        sql = _compiled_update(connection, model, fields, values, obj.pk)
        # The ORM writes a None as NULL in the SQL itself (no parameter): the SQL is compiled per pattern of them.
        params = [
            f.get_db_prep_save(value, connection) for f, value in zip(fields, values, strict=True) if value is not None
        ]
        params.append(meta.pk.get_db_prep_value(obj.pk, connection))
        with statement_cursor(connection) as cursor:
            cursor.execute(sql, params)
            updated = cursor.rowcount
        if not updated:
            raise DatabaseError("Save with update_fields did not affect any rows.")
    obj._state.db = using
    obj._state.adding = False
    post_save.send(sender=model, instance=obj, created=False, update_fields=update_fields, raw=False, using=using)


def row_insert(obj: Model) -> None:
    """``obj.save(force_insert=True)`` (what ``objects.create`` runs) for a new row, its INSERT compiled to SQL once
    per model and connection: the ``pre_save`` signal, each field's ``pre_save`` (``auto_now_add`` stamps) and
    database value, the INSERT with the returned primary key (and any other column the database returns), the
    instance's state, the ``post_save`` signal (``created=True``). A model it cannot compile as that save does (an
    inherited or proxy model, a primary key given or not automatic, an expression among the values) is saved by the
    ORM."""
    from django.db import router
    from django.db.models.signals import post_save, pre_save

    model = type(obj)
    meta = model._meta
    obj._prepare_related_fields_for_save(operation_name="save")  # type: ignore[attr-defined]  # private, not in the stubs
    fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
    if (
        meta.proxy
        or meta.parents
        or meta.auto_created
        or meta.order_with_respect_to
        or meta.auto_field is None
        or meta.pk is not meta.auto_field
        or obj.pk is not None
        or any(hasattr(getattr(obj, f.attname), "resolve_expression") for f in fields)
    ):
        obj.save(force_insert=True)
        return
    using = router.db_for_write(model, instance=obj)
    connection = connections[using]
    pre_save.send(sender=model, instance=obj, raw=False, using=using, update_fields=None)
    with transaction.mark_for_rollback_on_error(using=using):
        insert = _compiled_insert(connection, model, fields, obj)  # before the stamps: compiling stamps them too
        values = [f.pre_save(obj, True) for f in fields]
        params = [f.get_db_prep_save(value, connection) for f, value in zip(fields, values, strict=True)]
        with statement_cursor(connection) as cursor:
            cursor.execute(insert.sql, params)
            row = insert.returned(cursor)
        if row is not None:
            for value, field in zip(row, insert.returning_fields, strict=True):
                setattr(obj, field.attname, value)
    obj._state.db = using
    obj._state.adding = False
    post_save.send(sender=model, instance=obj, created=True, update_fields=None, raw=False, using=using)


def _compiled(connection: BaseDatabaseWrapper) -> dict:
    return connection.__dict__.setdefault("_studio_compiled_writes", {})


def _compiled_update(connection: BaseDatabaseWrapper, model: type[Model], fields: list, values: list, pk: Any) -> str:
    key = ("update", model, tuple((f.attname, value is None) for f, value in zip(fields, values, strict=True)))
    cache = _compiled(connection)
    sql = cache.get(key)
    if sql is None:
        from django.db.models.sql.subqueries import UpdateQuery

        if any(hasattr(f, "get_placeholder") for f in fields):
            raise ValueError("a field with its own SQL placeholder cannot be written by a compiled UPDATE")
        query = UpdateQuery(model)
        query.add_update_fields([(f, None, value) for f, value in zip(fields, values, strict=True)])
        query.add_filter("pk", pk)  # type: ignore[arg-type]  # Django 5.2 takes the lookup and the value apart
        sql, params = query.get_compiler(connection=connection).as_sql()
        if len(params) != len([v for v in values if v is not None]) + 1:  # the values in field order, then the pk
            raise ValueError(f"the ORM's UPDATE of {model._meta.label} has {len(params)} parameters")
        cache[key] = sql
    return sql


class _CompiledInsert:
    def __init__(self, connection: BaseDatabaseWrapper, model: type[Model], fields: list, obj: Model) -> None:
        from django.db.models import AutoField
        from django.db.models.sql.subqueries import InsertQuery

        if any(hasattr(f, "get_placeholder") for f in fields):
            raise ValueError("a field with its own SQL placeholder cannot be written by a compiled INSERT")
        meta = model._meta
        self.connection = connection
        self.returning_fields = meta.db_returning_fields
        query = InsertQuery(model)
        query.insert_values(fields, [obj])
        compiler = query.get_compiler(connection=connection)
        compiler.returning_fields = self.returning_fields
        [(self.sql, params)] = compiler.as_sql()
        if len(params) != len(fields):
            raise ValueError(f"the ORM's INSERT of {meta.label} has {len(params)} parameters for {len(fields)} fields")
        self.returning_params = compiler.returning_params
        features = connection.features
        if self.returning_fields and features.can_return_columns_from_insert:
            self.fetch = "columns"
        elif self.returning_fields and isinstance(self.returning_fields[0], AutoField):
            self.fetch, self.returning_fields = "last_insert_id", self.returning_fields[:1]
        else:
            self.fetch, self.returning_fields = "", []
        columns = [f.get_col(meta.db_table) for f in self.returning_fields]
        self.compiler = compiler
        self.converters = compiler.get_converters(columns)
        self.table, self.pk_column = meta.db_table, meta.pk.column

    def returned(self, cursor: CursorWrapper) -> tuple | None:
        """The returned columns of the row just inserted, as the ORM's insert reads and converts them."""
        if self.fetch == "columns":
            # The backends' own (PostgreSQL's, SQLite's), which the base operations of the stubs do not have.
            row = self.connection.ops.fetch_returned_insert_columns(cursor, self.returning_params)  # type: ignore[attr-defined]
        elif self.fetch == "last_insert_id":
            # A primary key always has its column (str | None in the stubs, for a field with none).
            row = (self.connection.ops.last_insert_id(cursor, self.table, self.pk_column),)  # type: ignore[arg-type]
        else:
            return None
        if self.converters:
            (row,) = self.compiler.apply_converters([row], self.converters)
        return tuple(row)


def _compiled_insert(connection: BaseDatabaseWrapper, model: type[Model], fields: list, obj: Model) -> _CompiledInsert:
    key = ("insert", model)
    cache = _compiled(connection)
    insert = cache.get(key)
    if insert is None:
        insert = cache[key] = _CompiledInsert(connection, model, fields, obj)
    return insert
