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
