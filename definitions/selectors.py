"""What other apps read of the definitions: the strategy names and context field names an
operator can pick (the Django admin's strategy editor), and the checks the flags' strategy
writes make against them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Model

from definitions.models import ContextField, StrategyDefinition


def strategy_names() -> list[str]:
    """The names of the strategies a flag may use, in Unleash's order (sort order, then name):
    the built-in ones first, then custom ones; deprecated ones too (Unleash still takes them)."""
    return list(StrategyDefinition.objects.values_list("name", flat=True))


def context_field_names() -> list[str]:
    """The context fields a constraint or a stickiness may name, in Unleash's order (by name)."""
    return list(ContextField.objects.values_list("name", flat=True))


def legal_values(context_names: set[str]) -> dict[str, list[str]]:
    """The legal values of those of the named context fields that list any (one query): a
    constraint on such a field may only use them, as Unleash's `validateConstraint` holds."""
    if not context_names:
        return {}
    rows = ContextField.objects.filter(pk__in=context_names).values_list("name", "legal_values")
    return {
        name: [item["value"] for item in values]
        for name, values in rows
        if isinstance(values, list) and values
    }


def _held(model: type[Model], keys: Iterable[str]) -> set[str]:
    """Of `keys`, those naming a row of `model`, each row held FOR SHARE until the caller's
    transaction ends (PostgreSQL, in key order; SQLite's transactions serialise writers). A
    delete or change of the row (which locks it FOR UPDATE) waits for the commit, then sees
    what the caller wrote."""
    wanted = sorted(set(keys))
    if not wanted:
        return set()
    quote = connection.ops.quote_name
    key = quote(model._meta.pk.column)
    lock = f" ORDER BY {key} FOR SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {key} FROM {quote(model._meta.db_table)} "
            f"WHERE {key} IN ({', '.join(['%s'] * len(wanted))}){lock}",
            wanted,
        )
        return {row[0] for row in cursor.fetchall()}


def hold_strategy_definition(name: str) -> bool:
    """Whether a strategy definition of that name exists (Unleash's `validateStrategyType`),
    for a strategy write, inside its transaction: the definition is held until the commit, so
    `delete_strategy` waits for it and then finds the strategy naming it (409), rather than
    deleting a type a strategy is being given."""
    return bool(_held(StrategyDefinition, [name]))


def hold_legal_values(context_names: set[str]) -> dict[str, list[str]]:
    """`legal_values` for a strategy write, inside its transaction: the named context fields
    are held until the commit, so a change of their legal values or a delete of the field waits
    for it (and a delete then finds the constraint on it)."""
    return legal_values(_held(ContextField, context_names))
