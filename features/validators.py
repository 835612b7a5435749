"""Shape checks for the value objects stored in JSON columns (strategy parameters, constraints,
strategy variants, flag variants, dependency variants).

The specification's tables nest these objects inside a flag's environment; they have no identity
of their own, so they live in JSON columns. JSON columns accept anything, so every write path (the
Django admin through `full_clean`, services through `validate_*`) checks the shape here. Each
message names the failing path, e.g. "variants/0/weight must be <= 1000".
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_date, parse_datetime

from features.regexes import regex_count_problem, regex_problem
from flagadmin.core.names import is_url_friendly

CONSTRAINT_OPERATORS = (
    "NOT_IN",
    "IN",
    "STR_ENDS_WITH",
    "STR_STARTS_WITH",
    "STR_CONTAINS",
    "NUM_EQ",
    "NUM_GT",
    "NUM_GTE",
    "NUM_LT",
    "NUM_LTE",
    "DATE_AFTER",
    "DATE_BEFORE",
    "SEMVER_EQ",
    "SEMVER_GT",
    "SEMVER_LT",
    "SEMVER_GTE",
    "SEMVER_LTE",
    "REGEX",
)
# Unleash's operator families: what each compares the context value against.
STRING_OPERATORS = ("STR_ENDS_WITH", "STR_STARTS_WITH", "STR_CONTAINS", "IN", "NOT_IN")
NUMBER_OPERATORS = ("NUM_EQ", "NUM_GT", "NUM_GTE", "NUM_LT", "NUM_LTE")
DATE_OPERATORS = ("DATE_AFTER", "DATE_BEFORE")
SEMVER_OPERATORS = ("SEMVER_EQ", "SEMVER_GT", "SEMVER_LT", "SEMVER_GTE", "SEMVER_LTE")
SINGLE_VALUE_OPERATORS = NUMBER_OPERATORS + DATE_OPERATORS + SEMVER_OPERATORS
# A number as JavaScript reads one from a string (Unleash's validator converts with Number()).
JS_NUMBER_RE = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
# Semantic versioning 2.0.0, strict (Unleash compares against the canonical form: no `v`).
SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
# ISO dates JavaScript's Date reads: a year, a month, a day, then a time with an optional
# offset (case aside: `t` and `z` read as `T` and `Z`).
ISO_DATE_RE = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?)?)?"
)
WEIGHT_TYPES = ("variable", "fix")
PAYLOAD_TYPES = ("json", "csv", "string", "number")
MAX_WEIGHT = 1000
# What a strategy's `sort_order` (an IntegerField: int4 on PostgreSQL) can hold.
SORT_ORDER_MIN = -(2**31)
SORT_ORDER_MAX = 2**31 - 1


MAX_FLAG_NAME_LENGTH = 100


def validate_flag_name(value: str) -> None:
    """The API's rule for flag names, for the forms (Django admin) that write them too."""
    if len(value) > MAX_FLAG_NAME_LENGTH:
        raise ValidationError(
            f"A flag name has at most {MAX_FLAG_NAME_LENGTH} characters.", code="max_length"
        )
    if not is_url_friendly(value):
        raise ValidationError(
            "A flag name is URL friendly: only A-Z a-z 0-9 - _ . ! ~ * ' ( ), and not . or ..",
            code="invalid",
        )


class _Checker:
    """Collects the first problem found, with the path where it was found. Its code is not
    "invalid": a model form would show its JSON field's own "Enter a valid JSON." instead."""

    def __init__(self, root: str) -> None:
        self.root = root

    def fail(self, path: str, message: str) -> None:
        where = f"{self.root}/{path}" if path else self.root
        raise ValidationError(f"{where} {message}", code="invalid_value")

    def is_object(self, value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            self.fail(path, "must be object")
        return value

    def is_list(self, value: Any, path: str) -> list:
        if not isinstance(value, list):
            self.fail(path, "must be array")
        return value

    def string(self, obj: dict, key: str, path: str, *, required: bool) -> None:
        if key not in obj:
            if required:
                self.fail(f"{path}/{key}".lstrip("/"), "is required")
            return
        if not isinstance(obj[key], str):
            self.fail(f"{path}/{key}".lstrip("/"), "must be string")

    def boolean(self, obj: dict, key: str, path: str) -> None:
        if key in obj and not isinstance(obj[key], bool):
            self.fail(f"{path}/{key}".lstrip("/"), "must be boolean")

    def choice(self, obj: dict, key: str, path: str, allowed: tuple[str, ...], *, required: bool):
        self.string(obj, key, path, required=required)
        if key in obj and obj[key] not in allowed:
            values = ", ".join(f'"{a}"' for a in allowed)
            self.fail(f"{path}/{key}".lstrip("/"), f"must be one of {values}")

    def string_list(self, obj: dict, key: str, path: str, *, required: bool) -> None:
        if key not in obj:
            if required:
                self.fail(f"{path}/{key}".lstrip("/"), "is required")
            return
        items = self.is_list(obj[key], f"{path}/{key}".lstrip("/"))
        for index, item in enumerate(items):
            if not isinstance(item, str):
                self.fail(f"{path}/{key}/{index}".lstrip("/"), "must be string")

    def weight(self, obj: dict, path: str, *, integer: bool) -> None:
        where = f"{path}/weight".lstrip("/")
        if "weight" not in obj:
            self.fail(where, "is required")
        weight = obj["weight"]
        number_types = int if integer else int | float
        if isinstance(weight, bool) or not isinstance(weight, number_types):
            self.fail(where, "must be integer" if integer else "must be number")
        if not 0 <= weight <= MAX_WEIGHT:
            self.fail(where, f"must be between 0 and {MAX_WEIGHT}")

    def payload(self, obj: dict, path: str) -> None:
        if "payload" not in obj or obj["payload"] is None:
            return
        where = f"{path}/payload".lstrip("/")
        payload = self.is_object(obj["payload"], where)
        self.choice(payload, "type", where, PAYLOAD_TYPES, required=True)
        self.string(payload, "value", where, required=True)


def _unique_names(check: _Checker, items: list[dict]) -> None:
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item["name"] in seen:
            check.fail(f"{index}/name", f'repeats the variant name "{item["name"]}"')
        seen.add(item["name"])


def validate_parameters(value: Any) -> None:
    """Strategy parameters: a map of string names to string values."""
    check = _Checker("parameters")
    params = check.is_object(value, "")
    for key, item in params.items():
        if not isinstance(item, str):
            check.fail(str(key), "must be string")


def validate_constraints(value: Any) -> None:
    """Constraints: `contextName`, `operator` required; `values` or `value` per operator, as
    `constraint_problem` says."""
    check = _Checker("constraints")
    # Counted before any pattern is parsed (`features.regexes`).
    if problem := regex_count_problem(check.is_list(value, "")):
        check.fail("", problem)
    for index, item in enumerate(value):
        path = str(index)
        constraint = check.is_object(item, path)
        check.string(constraint, "contextName", path, required=True)
        check.choice(constraint, "operator", path, CONSTRAINT_OPERATORS, required=True)
        check.boolean(constraint, "caseInsensitive", path)
        check.boolean(constraint, "inverted", path)
        check.string_list(constraint, "values", path, required=False)
        check.string(constraint, "value", path, required=False)
        if problem := constraint_problem(constraint):
            key, message = problem
            check.fail(f"{path}/{key}", message)


def constraint_problem(constraint: dict[str, Any]) -> tuple[str, str] | None:
    """What Unleash refuses first in a constraint of the right shape, as (its key, the
    problem), or None: a list operator needs `values` (one at least, none empty), a
    single-value one a non-empty `value` of its kind (a number, an ISO date, a semantic
    version), REGEX a regular expression (RE2) and no `inverted`. SDKs evaluate what is
    stored: a constraint Unleash would not store must not reach them."""
    operator = constraint.get("operator")
    value = constraint.get("value")
    if operator in STRING_OPERATORS:
        values = constraint.get("values")
        if not values:
            return "values", "must NOT have fewer than 1 items"
        for index, item in enumerate(values):
            if item == "":
                return f"values/{index}", "must NOT have fewer than 1 characters"
    if operator in SINGLE_VALUE_OPERATORS:
        if not value:
            return "value", f"must not be empty: the operator {operator} compares against it"
        if operator in NUMBER_OPERATORS and not JS_NUMBER_RE.fullmatch(value):
            return "value", "must be a number"
        if operator in DATE_OPERATORS and not _is_date(value):
            return "value", "must be an ISO date or date-time"
        if operator in SEMVER_OPERATORS and not SEMVER_RE.fullmatch(value):
            return "value", "must be a semantic version, e.g. 1.2.3 or 2.0.0-beta.1"
    if operator == "REGEX":
        if problem := regex_problem(value or ""):
            return "value", problem
        if constraint.get("inverted") is True:
            return "inverted", "must be false: the operator REGEX cannot be inverted"
    return None


def _is_date(value: str) -> bool:
    normal = value.upper()
    matched = ISO_DATE_RE.fullmatch(normal)
    if matched is None:
        return False
    if len(normal) <= len("2024-01"):  # a year, or a month of it
        return matched[2] is None or 1 <= int(matched[2]) <= 12
    try:
        return (parse_datetime(normal) or parse_date(normal)) is not None
    except ValueError:  # well formed, out of range (a 13th month)
        return False


def validate_strategy_variants(value: Any, *, weights: bool = True) -> None:
    """Strategy variants: name, integer weight 0-1000, weightType and stickiness required;
    with `weights`, also what `variant_weights_problem` refuses."""
    check = _Checker("variants")
    items = check.is_list(value, "")
    for index, item in enumerate(items):
        _check_variant(check, item, str(index), strategy=True)
    _unique_names(check, items)
    if weights and (problem := variant_weights_problem(items)):
        raise ValidationError(f"variants {problem}", code="invalid_value")


def _check_variant(check: _Checker, item: Any, path: str, *, strategy: bool) -> dict[str, Any]:
    """The fields every variant has: a strategy's variant needs an integer weight, a weight
    type and a stickiness, where a flag's takes any number and may leave the others out."""
    variant = check.is_object(item, path)
    check.string(variant, "name", path, required=True)
    check.weight(variant, path, integer=strategy)
    check.choice(variant, "weightType", path, WEIGHT_TYPES, required=strategy)
    check.string(variant, "stickiness", path, required=strategy)
    check.payload(variant, path)
    return variant


def validate_variants(value: Any) -> None:
    """A flag's variants in one environment: name and weight (0-1000) required; weightType,
    stickiness, payload and overrides (`{contextName, values}`) optional."""
    check = _Checker("variants")
    items = check.is_list(value, "")
    for index, item in enumerate(items):
        path = str(index)
        variant = _check_variant(check, item, path, strategy=False)
        if "overrides" in variant:
            where = f"{path}/overrides"
            for number, raw in enumerate(check.is_list(variant["overrides"], where)):
                override = check.is_object(raw, f"{where}/{number}")
                check.string(override, "contextName", f"{where}/{number}", required=True)
                check.string_list(override, "values", f"{where}/{number}", required=True)
    _unique_names(check, items)
    if problem := variant_weights_problem(items):
        raise ValidationError(f"variants {problem}", code="invalid_value")


def is_variable(variant: dict[str, Any]) -> bool:
    """A `variable` variant (the default of Unleash's variant schema when none is given)."""
    return variant.get("weightType", "variable") == "variable"


# Predicates, as the API frames them ("The `/body/variants` property must ..."); Unleash says
# 'There must be at least one "variable" variant' and 'The traffic distribution total must
# equal 100%'.
NO_VARIABLE_VARIANT = 'must contain at least one "variable" variant'
FIXED_OVER_TOTAL = (
    "must not have fix weights adding up to more than 1000 (the traffic distribution total "
    "must equal 100%)"
)


def variant_weights_problem(variants: list[dict[str, Any]]) -> str | None:
    """What Unleash refuses in a well-shaped variant list before storing it, or None: a
    non-empty list needs one `variable` variant at least, and the `fix` weights may not add
    up to more than 1000. A variant without a `weightType` is `variable` (the default of
    Unleash's variant schema)."""
    if not variants:
        return None
    if not any(is_variable(v) for v in variants):
        return NO_VARIABLE_VARIANT
    if sum(v["weight"] for v in variants if not is_variable(v)) > MAX_WEIGHT:
        return FIXED_OVER_TOTAL
    return None


def validate_dependency_variants(value: Any) -> None:
    """The variants a parent flag must resolve to: a list of variant names."""
    check = _Checker("variants")
    for index, item in enumerate(check.is_list(value, "")):
        if not isinstance(item, str):
            check.fail(str(index), "must be string")
