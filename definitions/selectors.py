"""What other apps read of the definitions: the strategy names and context field names an
operator can pick (the Django admin's strategy editor), and the checks the flags' strategy
writes make against them."""

from __future__ import annotations

from definitions.models import ContextField, StrategyDefinition


def strategy_names() -> list[str]:
    """The names of the strategies a flag may use, in Unleash's order (sort order, then name):
    the built-in ones first, then custom ones; deprecated ones too (Unleash still takes them)."""
    return list(StrategyDefinition.objects.values_list("name", flat=True))


def strategy_exists(name: str) -> bool:
    """Whether a strategy definition of that name exists (Unleash's `validateStrategyType`)."""
    return StrategyDefinition.objects.filter(pk=name).exists()


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
