"""Database helpers: retrying a write transaction that SQLite refused because another writer held the lock; one-row
reads compiled to SQL once."""

from __future__ import annotations

import functools
import random
import time

from django.db import OperationalError, connection, connections, transaction
from django.db.transaction import TransactionManagementError

LOCK_RETRIES = 8


def _is_lock_error(exc: OperationalError) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text


def atomic_with_retry(fn):
    """Run ``fn`` in one transaction; on SQLite's lock error roll back, wait and run it again.

    The busy timeout already waits for the lock; this is the last line so that `database is
    locked` never reaches a user even when a long writer outlasts the timeout.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
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

    def __init__(self, build, slots: dict):
        self.build = build
        self.slots = slots
        self.alias: str | None = None  # the database the queryset reads from (its router's answer), once built

    def first(self, **values):
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


def _in_range(value: int, field, connection) -> bool:
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
    def __init__(self, queryset, slots: dict, connection):
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
        self.related = get_related_populators(klass_info, compiler.select, connection.alias)
        self.annotations = compiler.annotation_col_map

    def run(self, values: dict):
        if self.locks and self.connection.get_autocommit():  # as the ORM refuses it
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(self.params)
        for i, name in self.positions:
            params[i] = values[name]
        with self.connection.cursor() as cursor:
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
