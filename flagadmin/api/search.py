"""What Unleash's search endpoints share (`/api/admin/search/features`, `/search/events`):
filters written `OPERATOR:value,value` in the query string, a page given by `offset` and
`limit`, and free text matched case-insensitively anywhere in a column.

Unleash's patterns are kept, so a value Unleash refuses is refused here with the same
sentence; where Unleash accepts a value and then ignores it (a negative offset, a limit out of
range, an unknown sort field) the value is refused here too, naming the property."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import BooleanField, Expression, Func, Q, Value
from django.http import QueryDict
from rest_framework import serializers

from flagadmin.api.errors import bounded_validation_error

IS_OPERATORS = ("IS", "IS_NOT", "IS_ANY_OF", "IS_NONE_OF")
POSITIVE_OPERATORS = ("IS", "IS_ANY_OF")
INCLUDE_OPERATORS = (
    "INCLUDE",
    "DO_NOT_INCLUDE",
    "INCLUDE_ALL_OF",
    "INCLUDE_ANY_OF",
    "EXCLUDE_IF_ANY_OF",
    "EXCLUDE_ALL",
)
# Unleash's own patterns (openapi/spec/*-query-parameters), quoted back in its messages.
IS_PATTERN = r"^(IS|IS_NOT|IS_ANY_OF|IS_NONE_OF):(.*?)(,([a-zA-Z0-9_]+))*$"
POSITIVE_PATTERN = r"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$"
TAG_PATTERN = (
    r"^(INCLUDE|DO_NOT_INCLUDE|INCLUDE_ALL_OF|INCLUDE_ANY_OF|EXCLUDE_IF_ANY_OF|EXCLUDE_ALL):"
    r"([^:,]+:.+?)(,\s*[^:,]+:.+?)*$"
)
INCLUDE_PATTERN = (
    r"^(INCLUDE|DO_NOT_INCLUDE|INCLUDE_ALL_OF|INCLUDE_ANY_OF|EXCLUDE_IF_ANY_OF|EXCLUDE_ALL):"
    r"(.*?)(,([a-zA-Z0-9_]+))*$"
)
DATE_RANGE_PATTERN = r"^(IS_BEFORE|IS_ON_OR_AFTER):\d{4}-\d{2}-\d{2}$"
DATE_IS_PATTERN = r"^(IS):\d{4}-\d{2}-\d{2}$"
# What Unleash's parser reads out of a value its pattern let through (`search-utils.ts`).
_OPERATOR_VALUE = re.compile(
    r"^(IS|IS_NOT|IS_ANY_OF|IS_NONE_OF|INCLUDE|DO_NOT_INCLUDE|INCLUDE_ALL_OF|INCLUDE_ANY_OF|"
    r"EXCLUDE_IF_ANY_OF|EXCLUDE_ALL|IS_BEFORE|IS_ON_OR_AFTER):(.+)$",
    re.DOTALL,
)


# Set for each search's reads and the event log's on PostgreSQL: the planner reads an index
# wherever one serves, since a sequential scan of 100,000 flags or 1,000,000 events is what
# such a request must not do (issue 27; checked by bench/search.py). Its default costs choose
# one to count most of a table, where the index scan that replaces it reads as many rows and
# is no cheaper (docs/search.md has the figures). A statement with no index to use is still
# planned.
INDEX_SCANS = ("enable_seqscan = off",)


@dataclass(frozen=True)
class Filter:
    """A parsed `OPERATOR:a,b` value: the operator and the values, trimmed."""

    operator: str
    values: tuple[str, ...]

    @property
    def negated(self) -> bool:
        return self.operator in ("IS_NOT", "IS_NONE_OF", "DO_NOT_INCLUDE", "EXCLUDE_IF_ANY_OF")


def parse_filter(value: str) -> Filter | None:
    """Unleash's `parseSearchOperatorValue`: None when nothing follows the operator (Unleash
    then filters nothing)."""
    match = _OPERATOR_VALUE.match(value)
    if match is None:
        return None
    return Filter(match[1], tuple(part.strip() for part in match[2].split(",")))


class FilterField(serializers.CharField):
    """A query parameter in Unleash's `OPERATOR:value,...` form, checked against Unleash's
    pattern; its value is a `Filter` (or None when no value follows the operator)."""

    def __init__(self, pattern: str, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(trim_whitespace=False, **kwargs)
        self.pattern = re.compile(pattern, re.DOTALL)
        # Braces doubled: DRF formats the message (`str.format`) before it is raised.
        quoted = pattern.replace("{", "{{").replace("}", "}}")
        self.error_messages["pattern"] = f'must match pattern "{quoted}"'

    def to_internal_value(self, data: Any) -> Filter | None:
        text = super().to_internal_value(data)
        if not self.pattern.search(text):
            self.fail("pattern")
        return parse_filter(text)


class DayFilterField(FilterField):
    """A `FilterField` whose value is a day (`YYYY-MM-DD`): a day that does not exist
    (`2026-02-30`) is refused rather than failing the query."""

    def __init__(self, pattern: str, **kwargs: Any) -> None:
        super().__init__(pattern, **kwargs)
        self.error_messages["day"] = "must name a day that exists"

    def to_internal_value(self, data: Any) -> Filter | None:
        found = super().to_internal_value(data)
        try:
            date.fromisoformat(found.values[0])
        except ValueError:
            self.fail("day")
        return found


# The largest value of the database's integer columns and of an SQL OFFSET.
INT64_MAX = 2**63 - 1


def whole_numbers(found: Filter | None, what: str) -> Filter | None:
    """`found`, when each of its values is an integer a bigint column can hold."""
    if found is not None and not all(
        part.lstrip("-").isdigit() and abs(int(part)) <= INT64_MAX for part in found.values
    ):
        raise serializers.ValidationError(f"must name {what} (whole numbers)")
    return found


class PageQuerySerializer(serializers.Serializer):
    """`offset` and `limit`, strings of digits as Unleash documents them. Unleash reads a
    negative or unreadable offset as 0 and a limit out of range as its default: here each is a
    400, so that a script never pages through something other than what it asked for."""

    max_limit = 100
    default_limit = 50

    offset = serializers.RegexField(
        r"^[0-9]+$",
        required=False,
        default="0",
        error_messages={"invalid": "must be a whole number of 0 or more"},
        help_text="How many matches to skip (default 0).",
    )
    limit = serializers.RegexField(
        r"^[0-9]+$",
        required=False,
        error_messages={"invalid": "must be a whole number"},
    )

    def validate_offset(self, value: str) -> int:
        if int(value) > INT64_MAX // 2:
            raise serializers.ValidationError("must be a whole number of 0 or more")
        return int(value)

    def validate_limit(self, value: str) -> int:
        limit = int(value)
        if not 1 <= limit <= self.max_limit:
            raise serializers.ValidationError(f"must be from 1 to {self.max_limit}")
        return limit

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.setdefault("limit", self.default_limit)
        return attrs


def parse_query(query: QueryDict, serializer_class: type[serializers.Serializer]) -> dict:
    """The query parameters the serializer declares, validated: a 400 naming each bad one
    (`/query/<name>`), a parameter given twice included. Others are ignored, as Unleash does."""
    fields = serializer_class().fields
    data: dict[str, Any] = {}
    repeated: dict[str, list[str]] = {}
    for name, field in fields.items():
        values = query.getlist(name)
        if isinstance(field, serializers.ListField):
            if values:
                data[name] = values
        elif len(values) > 1:
            repeated[name] = ["must be string"]
            data[name] = values
        elif values:
            data[name] = values[0]
    serializer = serializer_class(data=data)
    valid = serializer.is_valid()
    if repeated or not valid:
        errors = {**(serializer.errors if not valid else {}), **repeated}
        raise bounded_validation_error(errors, data, location="query")
    return serializer.validated_data


def search_terms(query: str | None) -> list[str]:
    """The free-text `query` as Unleash splits it: comma-separated terms, trimmed, the empty
    ones dropped."""
    if not query:
        return []
    return [term.strip() for term in query.split(",") if term.strip()]


class ILike(Func):
    """`expression` contains `term`, case-insensitively, with `%`, `_` and `\\` in the term
    matched as themselves (Unleash passes them to ILIKE as wildcards). On PostgreSQL this is
    ILIKE, which a trigram index serves; on SQLite, LIKE (case-insensitive for ASCII)."""

    output_field = BooleanField()

    def __init__(self, expression: Expression | str, term: str) -> None:
        escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        super().__init__(expression, Value(f"%{escaped}%"))

    def as_postgresql(self, compiler, connection, **extra_context):
        return super().as_sql(
            compiler, connection, template="(%(expressions)s)", arg_joiner=" ILIKE "
        )

    def as_sqlite(self, compiler, connection, **extra_context):
        return super().as_sql(
            compiler, connection, template="(%(expressions)s ESCAPE '\\')", arg_joiner=" LIKE "
        )


def any_term(expressions: list[Expression | str], terms: list[str]) -> Q:
    """Any of `expressions` contains any of `terms` (Unleash's `ILIKE ANY` over its columns)."""
    condition = Q()
    for term in terms:
        for expression in expressions:
            condition |= Q(ILike(expression, term))
    return condition
