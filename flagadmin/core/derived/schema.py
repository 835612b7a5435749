"""The shapes of the declaration: a trigger, a PostgreSQL function, and one set of derived data
(the tables it keeps, the app whose migrations apply its triggers, its recount)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TRIGGER = re.compile(r"CREATE\s+(?:CONSTRAINT\s+)?TRIGGER\s+(\w+)\s.*?\bON\s+(\w+)", re.DOTALL)
_FUNCTION = re.compile(r"CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(\w+)\(")
_BODY = re.compile(r"\$\$(.*)\$\$", re.DOTALL)


@dataclass(frozen=True)
class Trigger:
    """A `CREATE [CONSTRAINT] TRIGGER` statement; its name and table are read from it."""

    sql: str

    @property
    def name(self) -> str:
        return self._parts()[0]

    @property
    def table(self) -> str:
        return self._parts()[1]

    def _parts(self) -> tuple[str, str]:
        match = _TRIGGER.match(self.sql.strip())
        if match is None:
            raise ValueError(f"not a CREATE TRIGGER statement: {self.sql[:60]!r}")
        return match[1], match[2]


@dataclass(frozen=True)
class Function:
    """A PostgreSQL `CREATE OR REPLACE FUNCTION` statement whose body is quoted by `$$`."""

    sql: str

    @property
    def name(self) -> str:
        match = _FUNCTION.match(self.sql.strip())
        if match is None:
            raise ValueError(f"not a CREATE OR REPLACE FUNCTION statement: {self.sql[:60]!r}")
        return match[1]

    @property
    def body(self) -> str:
        """The text between the `$$`, as PostgreSQL keeps it (`pg_proc.prosrc`)."""
        match = _BODY.search(self.sql)
        if match is None:
            raise ValueError(f"function {self.name} has no $$-quoted body")
        return match[1]


@dataclass(frozen=True)
class Derived:
    """Tables the database keeps from other rows, and everything that keeps them.

    - `tables`: the models kept (`app_label.Model`);
    - `app`: the app whose migrations apply these triggers (the app of the kept tables);
    - `keeps`: what the rows hold, in a sentence;
    - `recount`: the dotted path of the function that recomputes them from the rows and fixes
      those that differ (each run by `manage.py repairprojectstats`);
    - `postgresql_functions`, `postgresql_triggers`: created in this order;
    - `postgresql_storage`: statements on the kept tables' storage (their fillfactor);
    - `sqlite_triggers`: SQLite has no trigger functions; each trigger holds its statements.
    """

    tables: tuple[str, ...]
    app: str
    keeps: str
    recount: str
    postgresql_functions: tuple[Function, ...]
    postgresql_triggers: tuple[Trigger, ...]
    postgresql_storage: tuple[str, ...]
    sqlite_triggers: tuple[Trigger, ...]

    def triggers(self, vendor: str) -> tuple[Trigger, ...]:
        return self.postgresql_triggers if vendor == "postgresql" else self.sqlite_triggers
