"""Names for the few hand-written SQL statements: a model's table and a field's column, quoted
by the database backend. Statements take these from the models, never spell them out, so a
renamed table or column cannot leave a statement behind."""

from __future__ import annotations

from django.db import connection
from django.db.models import Model


def table(model: type[Model]) -> str:
    """The model's table, quoted for SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[Model], field: str) -> str:
    """The column of the model's field, quoted for SQL."""
    return connection.ops.quote_name(model._meta.get_field(field).column)


def lock_tables_against_writes(*models: type[Model]) -> None:
    """Within the caller's transaction, make writers of the models' tables wait until it ends
    while readers go on (PostgreSQL's SHARE lock); SQLite's transactions hold its one write lock
    already. For recomputing what triggers keep from those tables."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {', '.join(table(model) for model in models)} IN SHARE MODE")
