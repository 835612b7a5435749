"""What a request did to the database, read once from the SQL it ran: each statement as its
kind, the table it is about and the row lock it takes. Lock-order tests assert on these (which
rows were locked, how, and before which write) rather than on SQL text, so that a change in
how Django spells a query does not break them; this is the one place that reads the text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_KIND_AND_TABLE = re.compile(
    r'^(?:(SELECT)\b.*?\bFROM "(\w+)"|(INSERT) INTO "(\w+)"'
    r'|(UPDATE) "(\w+)"|(DELETE) FROM "(\w+)")',
    re.DOTALL,
)
_ROW_LOCK = re.compile(r" FOR (NO KEY UPDATE|UPDATE|KEY SHARE|SHARE)(?: OF [^ ]+)?$")
WRITES = ("INSERT", "UPDATE", "DELETE")


@dataclass(frozen=True)
class Statement:
    kind: str  # SELECT, INSERT, UPDATE, DELETE, or OTHER (a savepoint, a function call)
    table: str | None  # the table read (the first after FROM) or written
    lock: str | None  # the row lock a SELECT takes: "UPDATE", "NO KEY UPDATE", "SHARE", ...

    @property
    def writes(self) -> bool:
        return self.kind in WRITES


class Trace(list[Statement]):
    """The statements of a captured block, in the order they ran."""

    def first(self, *, kind: str | None = None, table: str | None = None, lock=None) -> int:
        """The index of the first statement matching every criterion given (`lock=True`: any
        row lock), or len(self) when none does."""
        for index, statement in enumerate(self):
            if kind is not None and statement.kind != kind:
                continue
            if table is not None and statement.table != table:
                continue
            if lock is True and statement.lock is None:
                continue
            if lock is not None and lock is not True and statement.lock != lock:
                continue
            return index
        return len(self)

    def first_write(self, table: str | None = None) -> int:
        """The index of the first INSERT, UPDATE or DELETE (of `table`), or len(self)."""
        return next(
            (
                index
                for index, statement in enumerate(self)
                if statement.writes and table in (None, statement.table)
            ),
            len(self),
        )

    def locks(self, before: int | None = None) -> list[tuple[str, str]]:
        """Every row lock taken (by the statements before index `before`), as (table, lock),
        in order."""
        return [(s.table, s.lock) for s in self[:before] if s.lock is not None]


def statement(sql: str) -> Statement:
    match = _KIND_AND_TABLE.match(sql.lstrip())
    if match is None:
        return Statement("OTHER", None, None)
    groups = match.groups()
    kind, table = next(
        (groups[i], groups[i + 1]) for i in range(0, len(groups), 2) if groups[i] is not None
    )
    lock = _ROW_LOCK.search(sql)
    return Statement(kind, table, lock.group(1) if lock and kind == "SELECT" else None)


def trace(captured: Iterable[Mapping[str, str]]) -> Trace:
    """The statements of Django's captured queries (`CaptureQueriesContext`,
    `django_assert_num_queries`'s context)."""
    return Trace(statement(query["sql"]) for query in captured)
