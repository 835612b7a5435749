"""The context a Frontend API request is decided for, built as Unleash 8.2 builds it
(`frontend-api-controller.ts: createContext`, `create-context.ts`):

- GET: the query parameters, parsed as Express's `qs` parses them (`properties[country]=no` is
  the property `country`; a repeated parameter is a list); POST: the body's `context` object,
  whose known fields are strings (numbers, booleans and null taken as Unleash's validator
  coerces them, lists and objects refused with 400).
- `remoteAddress` defaults to the caller's address and `sessionId` to a new random value.
- `appName`, `environment`, `userId`, `sessionId` and `remoteAddress` stay at the top (when not
  empty); every other field joins `properties` (a property of the same name wins).
- `currentTime` is among those other fields on Unleash, so its SDK's date constraints, which
  read only the top-level field, compare with the time of the request (measured: a flag on
  after 2100 stays off for `currentTime=2200-...`). Yggdrasil also reads a `currentTime`
  property as the time, so it is left out of the context altogether.
- Values are strings as JavaScript's `String()` writes them (Unleash's SDK compares them so).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from django.http import QueryDict
from rest_framework import serializers

from flagadmin.api.fields import js_number_string

CURRENT_TIME = "currentTime"
TOP_LEVEL_FIELDS = ("appName", "environment", "userId", "sessionId", "remoteAddress")
# The body's fields that Unleash's `sdkContextSchema` declares as strings.
STRING_FIELDS = ("appName", "currentTime", "environment", "remoteAddress", "sessionId", "userId")
# `key[a][b]`: the name and its bracketed parts, as `qs` splits a query key.
BRACKETS = re.compile(r"\[([^\[\]]*)\]")
# RFC 3339 date-time, the `date-time` format Unleash's validator checks `currentTime` with.
DATE_TIME = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$", re.IGNORECASE
)


def js_string(value: Any) -> str | None:
    """`value` as JavaScript's `String()` writes it; None for null (Unleash's SDK reads a null
    field as absent)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number_string(value)
    if isinstance(value, list):
        return ",".join("" if item is None else (js_string(item) or "") for item in value)
    return "[object Object]"


# --- GET: the query ---------------------------------------------------------------------------


def query_items(query: QueryDict) -> Iterator[tuple[str, str]]:
    """The query's `(key, value)` pairs, a repeated key once per value."""
    for key, values in query.lists():
        for value in values:
            yield key, value


def context_from_query(items: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The query's `(key, value)` pairs as `qs` nests them, as far as a context reads them: a
    plain key, `key[]` (a list), `properties[name]`; deeper nesting is an object."""
    found: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for key, value in items:
        name, _, rest = key.partition("[")
        if not rest:
            _add(found, key, value)
            continue
        parts = BRACKETS.findall("[" + rest)
        if name == "properties" and len(parts) == 1 and parts[0]:
            _add(properties, parts[0], value)
        elif name == "properties" and parts and parts[0]:
            properties[parts[0]] = {}
        elif name and parts == [""]:
            _add(found, name, [value])
        elif name:
            found[name] = {}
    if properties or "properties" in found:
        given = found.get("properties")
        found["properties"] = {**(given if isinstance(given, dict) else {}), **properties}
    return found


def _add(into: dict[str, Any], key: str, value: str | list[str]) -> None:
    """A repeated key becomes a list, as `qs` makes it."""
    if key not in into:
        into[key] = value
        return
    held = into[key]
    held = held if isinstance(held, list) else [held]
    into[key] = held + (value if isinstance(value, list) else [value])


# --- POST: the body ---------------------------------------------------------------------------


def context_from_body(data: Any) -> dict[str, Any]:
    """The body's `context` (an empty one when absent), checked and coerced as Unleash's
    `frontendApiFeaturesPostSchema` does; 400 (a DRF validation error) otherwise."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["must be object"]})
    if "context" not in data:
        return {}
    context = data["context"]
    if not isinstance(context, dict):
        raise serializers.ValidationError({"context": ["must be object"]})
    errors: dict[str, Any] = {}
    coerced = dict(context)
    for field in STRING_FIELDS:
        if field in context:
            value, problem = _coerced_string(context[field])
            if problem is None and field == "appName" and value == "":
                problem = "must NOT have fewer than 1 characters"
            if problem is None and field == "currentTime" and not _is_date_time(value):
                problem = 'must match format "date-time"'
            if problem:
                errors[field] = [problem]
            else:
                coerced[field] = value
    if "properties" in context:
        properties = context["properties"]
        if not isinstance(properties, dict):
            errors["properties"] = ["must be object"]
        else:
            coerced_properties, problems = {}, {}
            for name, value in properties.items():
                text, problem = _coerced_string(value)
                if problem:
                    problems[name] = [problem]
                else:
                    coerced_properties[name] = text
            if problems:
                errors["properties"] = problems
            coerced["properties"] = coerced_properties
    if errors:
        raise serializers.ValidationError({"context": errors})
    return coerced


def _coerced_string(value: Any) -> tuple[str, str | None]:
    """A string field's value as Unleash's validator coerces it (`coerceTypes`): a number or
    boolean as its text, null as the empty string; a list or an object is refused."""
    if isinstance(value, list | dict):
        return "", "must be string"
    if value is None:
        return "", None
    return js_string(value) or "", None


def _is_date_time(value: str) -> bool:
    if not DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


# --- both --------------------------------------------------------------------------------------


def unleash_context(given: Mapping[str, Any], remote_address: str) -> dict[str, Any]:
    """`given` (from the query or the body) as Unleash evaluates it: defaults filled in,
    other fields moved into `properties`, every value a string."""
    context = {key: js_string(value) for key, value in given.items() if key != "properties"}
    context["remoteAddress"] = context.get("remoteAddress") or remote_address
    context["sessionId"] = context.get("sessionId") or secrets.token_hex(18)
    properties: dict[str, str] = {}
    for key, value in context.items():
        if key not in TOP_LEVEL_FIELDS and value is not None:
            properties[key] = value
    properties.pop(CURRENT_TIME, None)
    given_properties = given.get("properties")
    if isinstance(given_properties, Mapping):
        for key, value in given_properties.items():
            text = js_string(value)
            if text is not None and key != CURRENT_TIME:
                properties[str(key)] = text
    found: dict[str, Any] = {
        field: context[field] for field in TOP_LEVEL_FIELDS if context.get(field)
    }
    found["properties"] = properties
    return found
