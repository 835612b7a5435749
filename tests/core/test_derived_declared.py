"""The database holds the derived data's triggers exactly as `flagadmin.core.derived` declares them:
every declared trigger (and, on PostgreSQL, function) present with the declared text, compared
with whitespace normalised, and none that is not declared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.utils.module_loading import import_string

from flagadmin.core.derived import DERIVED, apply, normalised

pytestmark = pytest.mark.django_db

APPS = sorted({derived.app for derived in DERIVED})
POSTGRESQL = connection.vendor == "postgresql"
only_postgresql = pytest.mark.skipif(not POSTGRESQL, reason="PostgreSQL's functions")
only_sqlite = pytest.mark.skipif(POSTGRESQL, reason="SQLite's trigger texts")


def declared_triggers() -> dict[str, str]:
    """Each declared trigger's table, by trigger name."""
    return {
        trigger.name: trigger.table
        for derived in DERIVED
        for trigger in derived.triggers(connection.vendor)
    }


def declared_functions() -> dict[str, str]:
    """Each declared PostgreSQL function's body, normalised, by name."""
    return {
        function.name: normalised(function.body)
        for derived in DERIVED
        for function in derived.postgresql_functions
    }


def live_triggers() -> dict[str, tuple[str, str]]:
    """Every trigger the database holds, by name: its table and its definition, normalised
    (PostgreSQL: `pg_get_triggerdef`, leaving out the internal ones of foreign keys; SQLite:
    the statement as written)."""
    with connection.cursor() as cursor:
        if POSTGRESQL:
            cursor.execute(
                "SELECT t.tgname, c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
                " JOIN pg_class c ON c.oid = t.tgrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE NOT t.tgisinternal AND n.nspname = current_schema()"
            )
        else:
            cursor.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
        return {name: (table, normalised(sql)) for name, table, sql in cursor.fetchall()}


def live_functions() -> dict[str, tuple[str, str]]:
    """Every function of the schema but those of extensions, by name: its body (`prosrc`) and
    its definition (`pg_get_functiondef`), normalised."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.proname, p.prosrc, pg_get_functiondef(p.oid) FROM pg_proc p"
            " JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() AND p.prokind = 'f'"
            " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass"
            " AND d.objid = p.oid AND d.deptype = 'e')"
        )
        return {
            name: (normalised(body), normalised(definition))
            for name, body, definition in cursor.fetchall()
        }


@dataclass
class RecordingEditor:
    """Stands for a schema editor: records what `apply` would execute."""

    connection: Any
    executed: list[str] = field(default_factory=list)

    def execute(self, sql: str) -> None:
        self.executed.append(sql)


def test_triggers__live_database__exactly_the_declared_ones_on_their_tables():
    # Given the migrated test database / When its triggers are read
    live = {name: table for name, (table, _) in live_triggers().items()}

    # Then
    assert live == declared_triggers()


@only_sqlite
def test_sqlite_triggers__live_database__hold_the_declared_statements():
    live = {name: sql for name, (_, sql) in live_triggers().items()}

    assert live == {
        trigger.name: normalised(trigger.sql)
        for derived in DERIVED
        for trigger in derived.sqlite_triggers
    }


@only_sqlite
@pytest.mark.parametrize("app", APPS)
def test_apply__sqlite_database_already_migrated__executes_nothing(app):
    editor = RecordingEditor(connection)

    apply(editor, app)

    assert editor.executed == []


@only_postgresql
def test_postgresql_functions__live_database__exactly_the_declared_ones_with_their_bodies():
    live = {name: body for name, (body, _) in live_functions().items()}

    assert live == declared_functions()


@only_postgresql
def test_apply__postgresql_database_already_migrated__leaves_every_definition_as_it_was():
    # Given the definitions in force, as PostgreSQL writes them out
    triggers_before, functions_before = live_triggers(), live_functions()

    # When the declaration is applied (then rolled back)
    with transaction.atomic():
        with connection.schema_editor() as editor:
            for app in APPS:
                apply(editor, app)
        triggers_after, functions_after = live_triggers(), live_functions()
        transaction.set_rollback(True)

    # Then the declared statements define what was there already, and nothing else
    assert triggers_after == triggers_before
    assert functions_after == functions_before


@only_postgresql
def test_postgresql_storage__live_database__the_declared_fillfactor():
    declared = {
        statement.split()[2]: statement.split("(", 1)[1].rstrip(")")
        for derived in DERIVED
        for statement in derived.postgresql_storage
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, array_to_string(reloptions, ',') FROM pg_class"
            " WHERE relname = ANY(%s)",
            [list(declared)],
        )
        live = dict(cursor.fetchall())

    assert live == {table: option.replace(" ", "") for table, option in declared.items()}


@pytest.mark.parametrize("derived", DERIVED, ids=lambda derived: derived.tables[0])
def test_declaration__each_entry__names_models_and_a_callable_recount(derived):
    assert all(apps.get_model(label) for label in derived.tables)
    assert callable(import_string(derived.recount))
