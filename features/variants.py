"""Variant weights as Unleash stores them (its `fixVariantWeights`), for strategy variants and a
flag's variants in an environment alike.

SDKs pick a variant by walking the list and adding weights up to the context's hash, so both the
weights and the order decide who gets what: stored as sent, the same request gave 22-84 % of
users another variant than Unleash does. Unleash keeps `fix` weights as sent, splits what they
leave of 1000 evenly over the `variable` ones (the remainder, one by one, to the first variable
ones as sent), and sorts the list by name with JavaScript's `localeCompare`: the Unicode
Collation Algorithm (pyuca), so `a` < `B` < `c` and `_x` < `-x` < `x`, unlike code-point order.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.core.exceptions import ValidationError

from features.validators import MAX_WEIGHT, is_variable, variant_weights_problem


def validate_variant_weights(variants: list[dict[str, Any]]) -> None:
    """`variant_weights_problem` as a Django validation error (forms, model validators)."""
    if problem := variant_weights_problem(variants):
        raise ValidationError(problem, code="invalid")


def fix_variant_weights(variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list as Unleash stores it: new dicts, `variable` weights recomputed, sorted by name.
    Apply it once, to what the client sent: the remainder goes by the order sent, so applying
    it to a sorted list again may move it. Raises ValidationError where Unleash refuses."""
    validate_variant_weights(variants)
    if not variants:
        return []
    fixed_total = sum(v["weight"] for v in variants if not is_variable(v))
    variable = [v for v in variants if is_variable(v)]
    share, remainder = divmod(MAX_WEIGHT - fixed_total, len(variable))
    result = []
    for variant in variants:
        fixed = dict(variant)
        if is_variable(variant):
            fixed["weightType"] = "variable"
            fixed["weight"] = share + (1 if remainder > 0 else 0)
            remainder -= 1
        result.append(fixed)
    # Unleash lists the variable ones, then the fixed ones, then sorts (stable): the same order
    # for equal names, which names' uniqueness rules out anyway.
    result.sort(key=lambda v: not is_variable(v))
    result.sort(key=lambda v: _collation_key(v["name"]))
    return result


@cache
def _collator() -> Any:
    """pyuca's collator, made on first use: its table is loaded by the processes that sort
    variants, not by every one at start-up."""
    import pyuca

    return pyuca.Collator()


def _collation_key(name: str) -> tuple[int, ...]:
    return _collator().sort_key(name)
