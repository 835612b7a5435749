"""Database timeouts and telling a database outage from a bug.

PostgreSQL gets three bounds (settings `DB_CONNECT_TIMEOUT`, `DB_STATEMENT_TIMEOUT`):

- connecting gives up after `DB_CONNECT_TIMEOUT` seconds (libpq's `connect_timeout`);
- the server cancels a statement after `DB_STATEMENT_TIMEOUT` (`statement_timeout`);
- the app itself stops waiting for any answer `DB_WAIT_MARGIN` seconds later. A server that is
  frozen (SIGSTOP, a stuck host) cannot cancel anything, and its kernel still acknowledges the
  packets, so TCP keepalives and `tcp_user_timeout` never fire either: only a client-side bound
  gives the worker back. psycopg 3.3 waits on every round trip (query, commit, rollback, the
  health check's `SELECT 1`) through `Connection.wait(..., timeout=)`; `bound_waits` sets that
  timeout on each new connection and closes the connection when it expires.

Worst case for a request on a frozen server: one bounded wait on a kept connection
(`DB_STATEMENT_TIMEOUT + DB_WAIT_MARGIN`, 3.5 s by default) or one connect attempt
(`DB_CONNECT_TIMEOUT`, 2 s), then 503.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

T = TypeVar("T")

# How much longer than the server's statement timeout the app waits for an answer: long enough
# for the server's own cancellation to arrive first when the server is alive.
DB_WAIT_MARGIN = 0.5


class DatabaseNotAnswering(OperationalError):
    """The server did not answer within the bound. Django's own error class rather than the
    driver's on purpose: Django's connection health check (`is_usable`) swallows driver errors
    and then connects again, which on a frozen server costs another `DB_CONNECT_TIMEOUT`
    inside the same request; this error ends the request at once (503)."""


def wait_bound(statement_timeout: float) -> float | None:
    """Seconds the app waits for one answer from PostgreSQL; None: unbounded."""
    return statement_timeout + DB_WAIT_MARGIN if statement_timeout > 0 else None


def bound_waits(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """`connection_created` receiver: every wait on a new PostgreSQL connection is bounded."""
    limit = wait_bound(settings.DB_STATEMENT_TIMEOUT)
    if connection.vendor != "postgresql" or limit is None:
        return
    import psycopg

    raw = connection.connection
    unbounded_wait = raw.wait

    def wait(gen: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", limit)
        try:
            return unbounded_wait(gen, *args, **kwargs)
        except psycopg.errors._WaitTimeout:
            # The server never answered: the protocol state is unknown, so the connection is
            # closed (Django opens a new one for the next request).
            raw.pgconn.finish()
            raise DatabaseNotAnswering(
                f"the database server did not answer within {limit:g} s"
            ) from None

    # An attribute of this connection only: psycopg calls `self.wait` / `conn.wait` everywhere.
    raw.wait = wait


def is_database_unavailable(exc: BaseException) -> bool:
    """True when `exc` says the database cannot be reached or used right now (down, frozen,
    timed out, restarting, locked), which is a 503 and no bug; False for anything else."""
    if isinstance(exc, InterfaceError):  # the connection was already closed
        return True
    if not isinstance(exc, OperationalError):
        return False
    if isinstance(exc.__cause__, sqlite3.Error):
        # SQLite waited its whole busy timeout for the write lock; its other operational
        # errors (a missing table, a read-only file) are bugs.
        return "locked" in str(exc).lower()
    # PostgreSQL's operational errors are all about the server, not the query: connection
    # failures and timeouts, statement_timeout (QueryCanceled), administrator shutdown, too
    # many connections, serialization failures and deadlocks (which a retry resolves).
    return True


def outage_summary(exc: BaseException) -> str:
    """One short line naming the database failure, for the log (never sent to the client)."""
    cause = exc.__cause__ or exc
    text = " ".join(str(cause).split())
    return f"{type(cause).__name__}: {text[:200]}"


def in_callers_transaction() -> bool:
    """Whether the code runs inside a transaction its caller opened (an atomic block, or
    autocommit off): what it reads may then include the caller's own uncommitted writes, so
    it must not be shared with, nor taken from, another request."""
    return connection.in_atomic_block or not connection.get_autocommit()


# Runs of a transaction in all when PostgreSQL keeps aborting it for a conflict.
CONFLICT_ATTEMPTS = 3


def is_conflict(exc: BaseException) -> bool:
    """Whether PostgreSQL aborted the transaction because of another one (a deadlock, a
    serialization failure): the same transaction run again can succeed."""
    return isinstance(exc, OperationalError) and isinstance(
        exc.__cause__, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure
    )


def atomic_retrying_conflicts(work: Callable[[], T]) -> T:
    """`work()` in a transaction of its own, run again from the start (up to
    `CONFLICT_ATTEMPTS` times in all) when PostgreSQL aborts it for a conflict with another
    transaction; everything it wrote in an aborted run is rolled back with it. Writers that
    lock rows in the same order never deadlock, but a transaction that writes many rows cannot
    always know every row its triggers lock. Inside a caller's transaction it runs once, in
    a savepoint: only the caller can run its whole transaction again."""
    if in_callers_transaction():
        with transaction.atomic():
            return work()
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return work()
        except OperationalError as exc:
            if attempt == CONFLICT_ATTEMPTS or not is_conflict(exc):
                raise
    raise AssertionError("unreachable")  # the last attempt returned or raised


@contextmanager
def read_snapshot(*, local_settings: Sequence[str] = ()) -> Iterator[None]:
    """Every query of the block reads the same snapshot of the database, and none may write:
    on PostgreSQL a REPEATABLE READ, READ ONLY transaction, with `local_settings` (constant
    SQL such as "jit = off") set for it alone; on SQLite a DEFERRED transaction, which in WAL
    mode reads one snapshot from its first read to its end without taking the write lock (the
    IMMEDIATE transactions of this project's writers take it at BEGIN). Inside a caller's
    transaction the caller's isolation rules, and the settings last until it ends; with
    autocommit off (the caller runs its own transactions) nothing is changed."""
    runs_own_transactions = not connection.in_atomic_block and not connection.get_autocommit()
    if runs_own_transactions:
        yield
        return
    if connection.vendor == "sqlite":
        with _deferred_transaction():
            yield
        return
    if connection.vendor != "postgresql":
        yield
        return
    statements = (
        []
        if connection.in_atomic_block
        else ["SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"]
    )
    statements += [f"SET LOCAL {setting}" for setting in local_settings]
    # savepoint=False: a transaction of its own, or none more inside the caller's.
    with transaction.atomic(savepoint=False):
        if statements:
            with connection.cursor() as cursor:
                cursor.execute("; ".join(statements))
        yield


@contextmanager
def _deferred_transaction() -> Iterator[None]:
    """SQLite: Django's atomic block begun as `BEGIN DEFERRED` for once (a savepoint of the
    caller's transaction when there is one)."""
    mode = getattr(connection, "transaction_mode", None)
    connection.transaction_mode = "DEFERRED"
    try:
        with transaction.atomic(savepoint=False):
            connection.transaction_mode = mode  # begun; nested blocks are savepoints
            yield
    finally:
        connection.transaction_mode = mode


@contextmanager
def unique_or_conflict(conflict: Callable[[], Exception | None]) -> Iterator[None]:
    """Runs the block in a savepoint, for a write whose uniqueness a pre-check has already
    tested: a concurrent request can still take the same value in between, and the unique
    constraint then fails. The savepoint rolls back that write alone, so that `conflict()` can
    look again and return the pre-check's own error (the same 409), which is raised instead.
    When it returns None the IntegrityError was about something else and goes on as it is."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as exc:
        error = conflict()
        if error is None:
            raise
        raise error from exc


class PreparedBinaryCursor(psycopg.Cursor):
    """A psycopg cursor with server-side binding whose statements PostgreSQL prepares once per
    connection (`prepare=True`; none when `DB_PREPARED_STATEMENTS` is off, see settings) and
    whose rows come in binary: psycopg's C loaders then read timestamps and integers without
    parsing text (Django's text loader for timestamps costs ~3 µs a value). Parsing and
    planning a flag creation's statements on every request was about a quarter of
    PostgreSQL's work for it."""

    prepare: bool = True

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        return super().execute(query, params, prepare=self.prepare, binary=True)


def prepared_cursor_on(db: BaseDatabaseWrapper, *, prepare: bool = True) -> Any:
    """Django's cursor wrapper (errors as Django's, queries logged and counted as any other)
    around a `PreparedBinaryCursor` on `db`'s open PostgreSQL connection; the caller has
    connected (`db.cursor()`, or `connect_checked`). Only for statements whose one plan suits
    every call, and written with `%s` placeholders that PostgreSQL binds."""
    raw = PreparedBinaryCursor(db.connection)
    raw.prepare = prepare
    return db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)


def connect_checked(db: BaseDatabaseWrapper) -> None:
    """Connect `db` as `db.cursor()` does: a kept connection that fails its health check is
    closed first, then (re)opened."""
    db.close_if_health_check_failed()
    db.ensure_connection()


@contextmanager
def prepared_cursor(db: BaseDatabaseWrapper) -> Iterator[Any]:
    """A cursor for a statement that runs on every request: on PostgreSQL a prepared,
    server-side binding one (`prepared_cursor_on`), elsewhere Django's own."""
    if db.vendor != "postgresql":
        with db.cursor() as cursor:
            yield cursor
        return
    connect_checked(db)
    with prepared_cursor_on(db) as cursor:
        yield cursor
