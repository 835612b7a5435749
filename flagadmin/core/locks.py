"""The members' lock, as the one way to take it: `members_write()` (docs/lock-order.md).

Every write that changes members (group memberships, project roles, role types), and every
delete of what they refer to (a group, a person, a project, a role), runs in `members_write()`:
the members' lock first, before any row lock or statement of its own on those rows, then the
rows it is about to refer to held (`MembersWrite.hold`) until the commit.

Why first: the tables' triggers take the same lock (`projects_members_lock()`, projects
migration 0003), but only after changing rows, and the rows they maintain (`ProjectMember`)
refer to projects and people that no writer could all lock beforehand; Django checks those
foreign keys at commit. With the lock first, a delete's FOR UPDATE is only ever held by the
lock's holder, so no writer waits for one while holding the lock, and no one holds a members
row or a table lock of `repairprojectstats` while waiting for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.models import Model

# The key of the PostgreSQL advisory lock; projects migration 0003's `projects_members_lock()`
# takes the same one.
MEMBERS_LOCK_KEY = 7202611230001


class MembersWrite:
    """A write of members under way, the members' lock held (`members_write`)."""

    def hold(
        self,
        model: type[Model],
        ids: Iterable[Any],
        *,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> set[Any]:
        """Of `ids` (primary keys), those naming a row of `model` (that also matches the SQL
        condition `where`, with `params`), each row held until the transaction ends: FOR KEY
        SHARE on PostgreSQL, in key order, which a delete of the row waits for (updates of
        columns no unique index covers do not). SQLite's IMMEDIATE transactions already
        serialise writers.

        So the rows a writer is about to refer to exist, and stay until the commit checks the
        foreign keys; a row deleted before is missing from the answer (a grant naming it is
        refused, a sign-in skips it, a group update leaves it out)."""
        wanted = sorted(set(ids))
        if not wanted:
            return set()
        meta = model._meta
        quote = connection.ops.quote_name
        key = quote(meta.pk.column)
        condition = f"{key} IN ({', '.join(['%s'] * len(wanted))})" + (
            f" AND {where}" if where else ""
        )
        lock = f" ORDER BY {key} FOR KEY SHARE" if connection.vendor == "postgresql" else ""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {key} FROM {quote(meta.db_table)} WHERE {condition}{lock}",
                [*wanted, *params],
            )
            return {row[0] for row in cursor.fetchall()}

    def lock_for_delete(self, model: type[Model], keys: Iterable[Any]) -> None:
        """Lock the rows of `model` with these keys FOR UPDATE (PostgreSQL), in key order,
        before deleting them: only the lock's holder ever holds such a lock, so no writer of
        members waits for one while holding the members' lock."""
        rows = model._base_manager.select_for_update().filter(pk__in=keys).order_by("pk")
        list(rows.values("pk"))


@contextmanager
def members_write() -> Iterator[MembersWrite]:
    """A transaction (a savepoint inside the caller's) that writes members: the members' lock
    is taken as it begins (PostgreSQL; SQLite's IMMEDIATE transactions already serialise
    writers) and held until the outermost transaction ends. Re-entrant: a write of members
    inside another takes it again, harmlessly."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [MEMBERS_LOCK_KEY])
        yield MembersWrite()
