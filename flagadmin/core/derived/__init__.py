"""The derived data: every table the database keeps from other rows, the triggers that keep it
(PostgreSQL and SQLite) as they are in force, and the recount that repairs it. Design page:
docs/derived-data.md.

The triggers fire in the transaction of every write, whatever makes it (the API, the Django
admin, a management command, SQL by hand). This module is the declaration: each app's latest
migration that calls `apply` makes the database hold exactly this, and
`tests/core/test_derived_declared.py` compares the live database's triggers with it.

It holds only SQL text keyed by table names: the tables belong to `features`, `projects`,
`groups` and the core, which lie above this app (docs/architecture.md), so nothing here imports
them; the recounts are named by dotted path.
"""

from __future__ import annotations

from typing import Any

from flagadmin.core.derived.flag_activity import FLAG_ACTIVITY
from flagadmin.core.derived.flag_counts import FLAG_COUNTS
from flagadmin.core.derived.flag_days import FLAG_DAYS
from flagadmin.core.derived.list_versions import FLAG_LIST_VERSIONS, PROJECT_LIST_VERSIONS
from flagadmin.core.derived.members import MEMBERS
from flagadmin.core.derived.schema import Derived, Function, Trigger

__all__ = ["DERIVED", "Derived", "Function", "Trigger", "applier", "apply", "normalised"]

# In the order they are applied: a trigger's function first (`projects_row_list_version`, which
# the flag side's triggers run, is the projects app's).
DERIVED: tuple[Derived, ...] = (
    MEMBERS,
    PROJECT_LIST_VERSIONS,
    FLAG_COUNTS,
    FLAG_DAYS,
    FLAG_ACTIVITY,
    FLAG_LIST_VERSIONS,
)


def normalised(sql: str) -> str:
    """`sql` with every run of whitespace made one space: how declared and live texts compare."""
    return " ".join(sql.split())


def apply(schema_editor: Any, app: str) -> None:
    """Make the database hold what is declared for `app`'s tables: functions by CREATE OR
    REPLACE, triggers dropped if they exist and created again, then the tables' storage.

    On SQLite a trigger whose text is already the declared one is left alone: SQLite fires the
    triggers of one event newest first, so creating it again would change their order."""
    postgresql = schema_editor.connection.vendor == "postgresql"
    declared = [derived for derived in DERIVED if derived.app == app]
    if postgresql:
        for derived in declared:
            for function in derived.postgresql_functions:
                schema_editor.execute(function.sql)
            for trigger in derived.postgresql_triggers:
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger.name} ON {trigger.table}")
                schema_editor.execute(trigger.sql)
            for statement in derived.postgresql_storage:
                schema_editor.execute(statement)
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        live = {name: normalised(sql) for name, sql in cursor.fetchall()}
    for derived in declared:
        for trigger in derived.sqlite_triggers:
            if live.get(trigger.name) != normalised(trigger.sql):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger.name}")
                schema_editor.execute(trigger.sql)


def applier(app: str):
    """`apply` for `app`, as a `RunPython` operation's function."""

    def run(apps: Any, schema_editor: Any) -> None:
        apply(schema_editor, app)

    return run
