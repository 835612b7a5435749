"""A strict JSON parser: the 100 kB limit, UTF-8 only, no NaN/Infinity, and only text that a
database can store (no NUL character, no unpaired surrogate escape such as "\\ud800")."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from flagadmin.api.errors import ContentTooLargeError, ValidationError


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _unstorable(text: str) -> bool:
    """True for text that PostgreSQL cannot store (NUL) or that is not Unicode at all (a lone
    surrogate from a "\\ud800" escape): either would fail in the database, as a 500."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _pointer(parts: list[str]) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def first_unstorable_text(data: object) -> str | None:
    """The JSON pointer (`/body/...`) of the first key or string that cannot be stored, if any.
    Iterative, so that a body nested as deep as json.loads allows cannot exhaust the stack; a
    stack of iterators, so that memory grows with the depth, not with the number of items."""
    if not isinstance(data, dict | list):
        return "/body" if isinstance(data, str) and _unstorable(data) else None
    stack: list[tuple[Iterator[tuple[object, object]], list[str]]] = [(_children(data), ["body"])]
    while stack:
        children, parts = stack[-1]
        for key, value in children:
            if isinstance(key, str) and _unstorable(key):
                return _pointer([*parts, key.encode("utf-8", "replace").decode()])
            if isinstance(value, str):
                if _unstorable(value):
                    return _pointer([*parts, str(key)])
            elif isinstance(value, dict | list):
                stack.append((_children(value), [*parts, str(key)]))
                break
        else:
            stack.pop()
    return None


def _children(node: dict | list) -> Iterator[tuple[object, object]]:
    return iter(node.items()) if isinstance(node, dict) else enumerate(node)


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.MAX_REQUEST_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ContentTooLargeError()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError("the body is not UTF-8") from exc
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ParseError(str(exc)) from exc
        except RecursionError as exc:
            raise ParseError("the body is nested too deeply") from exc
        path = first_unstorable_text(data)
        if path is not None:
            raise ValidationError.for_property(
                path,
                f"The `{path}` property must not contain the NUL character (\\u0000) or an "
                "unpaired surrogate escape (\\ud800-\\udfff).",
            )
        return data
