"""The SQL of the busiest write, the creation of a flag: its one read and its INSERTs.

Compiling the ORM's queries was most of a creation's CPU time (more than the database spent
executing them; about 1 ms per flag), so this path writes its statements once per process from
the models' own table and column names, and sends them in as few round trips as the database
allows. What it returns is in the state the ORM would leave: instances built with `from_db`
(only the columns read; the others deferred, as `.only()` would), and inserted instances with
their generated ids, their fields' `pre_save` applied (`auto_now`) and `_state` saved.
Everything else in the app uses the ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack, nullcontext, suppress
from dataclasses import dataclass
from functools import cache

import psycopg
from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.fields import AutoFieldMixin

from flagadmin.core.db import (
    PreparedBinaryCursor,
    connect_checked,
    prepared_cursor,
    prepared_cursor_on,
)
from flagadmin.core.sql import column, table
from projects.models import Environment, Project, ProjectEnvironment

User = get_user_model()

PROJECT_FIELDS = ("id", "name")
ENVIRONMENT_FIELDS = ("name", "type", "sort_order")
USER_FIELDS = ("id", "name", "username", "email", "image_url")


@dataclass(frozen=True)
class NewFlagTarget:
    """Where a new flag goes: its active project, the environments enabled in that project in
    display order (the flag gets one entry each), and the user it names as its creator (None
    when that user row is gone)."""

    project: Project
    environments: list[Environment]
    creator: User | None


@cache
def _target_sql() -> str:
    def p(field: str) -> str:
        return f"p.{column(Project, field)}"

    return (
        "SELECT "
        + ", ".join(p(f) for f in PROJECT_FIELDS)
        + ", "
        + ", ".join(f"e.{column(Environment, f)}" for f in ENVIRONMENT_FIELDS)
        + ", "
        + ", ".join(f"u.{column(User, f)}" for f in USER_FIELDS)
        + f" FROM {table(Project)} p"
        + f" LEFT JOIN {table(User)} u ON u.{column(User, 'id')} = %s"
        + f" LEFT JOIN {table(ProjectEnvironment)} pe"
        + f" ON pe.{column(ProjectEnvironment, 'project')} = {p('id')}"
        + f" LEFT JOIN {table(Environment)} e"
        + f" ON e.{column(Environment, 'name')} = pe.{column(ProjectEnvironment, 'environment')}"
        + f" WHERE {p('id')} = %s AND {p('archived_at')} IS NULL"
    )


def load_new_flag_target(project_id: str, *, creator_id: int | None) -> NewFlagTarget | None:
    """The target of a new flag in project `project_id` naming user `creator_id` as creator,
    in one query (prepared once per connection on PostgreSQL); None when the project does not
    exist or is archived."""
    db = connections[DEFAULT_DB_ALIAS]
    with prepared_cursor(db) as cursor:
        cursor.execute(_target_sql(), [creator_id, project_id])
        rows = cursor.fetchall()
    if not rows:
        return None
    env_at = len(PROJECT_FIELDS)
    user_at = env_at + len(ENVIRONMENT_FIELDS)
    project = Project.from_db(db.alias, PROJECT_FIELDS, rows[0][:env_at])
    environments = [
        Environment.from_db(db.alias, ENVIRONMENT_FIELDS, row[env_at:user_at])
        for row in rows
        if row[env_at] is not None  # the LEFT JOIN's row of a project without environments
    ]
    environments.sort(key=lambda env: (env.sort_order, env.name))
    creator = None
    if rows[0][user_at] is not None:
        creator = User.from_db(db.alias, USER_FIELDS, rows[0][user_at:])
    return NewFlagTarget(project=project, environments=environments, creator=creator)


@dataclass(frozen=True)
class _Insert:
    """One INSERT of instances of one model, and whether it reads back their generated ids."""

    rows: Sequence[Model]
    sql: str
    params: list
    returns_ids: bool


@cache
def _insert_plan(model: type[Model], vendor: str) -> tuple[list, str, bool]:
    """What an INSERT into `model`'s table needs, worked out once per process: the fields it
    writes, the statement's head (`INSERT INTO t (c1, ...) VALUES`), and whether it reads back
    a generated primary key."""
    meta = model._meta
    fields = [field for field in meta.concrete_fields if not isinstance(field, AutoFieldMixin)]
    quote = connection.ops.quote_name
    head = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    )
    return fields, head, isinstance(meta.pk, AutoFieldMixin)


def _insert(rows: Sequence[Model], db: BaseDatabaseWrapper) -> _Insert:
    """An INSERT of `rows` (instances of one model) as one statement. Values are prepared by
    the model fields themselves, `pre_save` first, exactly as `bulk_create` prepares them;
    a generated primary key is read back with RETURNING (both databases, in row order, as
    `bulk_create` relies on too)."""
    model = type(rows[0])
    fields, head, returns_ids = _insert_plan(model, db.vendor)
    params = [
        field.get_db_prep_save(field.pre_save(obj, True), db) for obj in rows for field in fields
    ]
    placeholders = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = head + ", ".join([placeholders] * len(rows))
    if returns_ids:
        sql += f" RETURNING {db.ops.quote_name(model._meta.pk.column)}"
    return _Insert(rows=rows, sql=sql, params=params, returns_ids=returns_ids)


def _saved(insert: _Insert, ids: list[tuple] | None, db: BaseDatabaseWrapper) -> None:
    for index, obj in enumerate(insert.rows):
        if ids is not None:
            obj.pk = ids[index][0]
        obj._state.adding = False
        obj._state.db = db.alias


def insert_together(groups: Sequence[Sequence[Model]]) -> None:
    """INSERT each group of instances (one model per group; empty groups are skipped), in
    order, all or nothing: inside the caller's transaction when there is one (the caller rolls
    back, or keeps a savepoint to go on after a failure), else in a transaction of their own.

    On PostgreSQL the statements are prepared once per connection and travel in one pipeline,
    between BEGIN and COMMIT when there is no caller's transaction: one round trip. The
    transaction is explicit because the pipeline's Sync ends it whatever happened: an error
    raised here before COMMIT was sent (a value that cannot be sent, a worker's timeout) would
    otherwise have PostgreSQL commit the statements already sent. On SQLite they run one by
    one. Raises IntegrityError when a constraint refuses a row."""
    # The connection itself, not the `connection` proxy: each attribute read through the proxy
    # is a thread-local lookup, and preparing the values reads dozens (a fifth of this CPU).
    db = connections[DEFAULT_DB_ALIAS]
    inserts = [_insert(rows, db) for rows in groups if rows]
    if db.vendor != "postgresql":
        own_transaction = not db.in_atomic_block
        with (
            transaction.atomic() if own_transaction else nullcontext(),
            db.cursor() as cursor,
        ):
            for insert in inserts:
                cursor.execute(insert.sql, insert.params)
                _saved(insert, cursor.fetchall() if insert.returns_ids else None, db)
        return
    connect_checked(db)
    raw = db.connection
    own_transaction = not db.in_atomic_block
    with ExitStack() as cursors_open:
        cursors = [cursors_open.enter_context(prepared_cursor_on(db)) for _ in inserts]
        try:
            # Django's errors for psycopg's, raised by an `execute` or by the Sync at the end.
            with db.wrap_database_errors, raw.pipeline():
                if own_transaction:
                    _transaction_command(raw, "BEGIN")
                for insert, cursor in zip(inserts, cursors, strict=True):
                    cursor.execute(insert.sql, insert.params)
                if own_transaction:
                    _transaction_command(raw, "COMMIT")
        except BaseException:
            if own_transaction:
                _roll_back_if_open(raw)
            raise
        for insert, cursor in zip(inserts, cursors, strict=True):
            _saved(insert, cursor.fetchall() if insert.returns_ids else None, db)


def _transaction_command(raw: psycopg.Connection, command: str) -> None:
    # Not prepared: PostgreSQL prepares only queries.
    cursor = PreparedBinaryCursor(raw)
    cursor.prepare = False
    cursor.execute(command)


def _roll_back_if_open(raw: psycopg.Connection) -> None:
    """End the transaction `insert_together` began, when a failure left it open (a refused
    row leaves it aborted; an error before COMMIT, open). A connection already closed (a
    server that stopped answering) has nothing to end."""
    if raw.closed or raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    with suppress(psycopg.Error):  # the error being raised says more
        raw.rollback()
