"""JSON Patch (RFC 6902) on a nested JSON document, as Unleash applies it (fast-json-patch):
`add` and `replace` into objects and arrays, `remove`, `move`, `copy` and `test`. A patch
that cannot be applied is a 400 naming the failing operation (Unleash 8.2 answers 500)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from flagadmin.core.errors import InvalidInputError


class PatchRefused(InvalidInputError):
    """A patch that cannot be applied (a failed `test`, a missing member, a bad pointer)."""


def _tokens(pointer: str, index: int) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _refused(index, f"{pointer!r} is no JSON Pointer.")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]


def _refused(index: int, reason: str) -> PatchRefused:
    return PatchRefused.at([str(index)], f"Could not apply provided patch: {reason}")


def _array_index(container: list, token: str, index: int, *, appending: bool) -> int:
    if appending and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _refused(index, f"{token!r} is no array index.")
    position = int(token)
    if position > len(container) or (position == len(container) and not appending):
        raise _refused(index, f"array index {position} is out of range.")
    return position


def _parent(document: Any, tokens: list[str], index: int) -> Any:
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_array_index(node, token, index, appending=False)]
        else:
            raise _refused(index, f"no member {token!r}.")
    return node


def _get(document: Any, tokens: list[str], index: int) -> Any:
    if not tokens:
        return document
    parent, last = _parent(document, tokens, index), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_array_index(parent, last, index, appending=False)]
    raise _refused(index, f"no member {last!r}.")


def _remove(document: Any, tokens: list[str], index: int) -> Any:
    if not tokens:
        raise _refused(index, "the whole document cannot be removed.")
    parent, last = _parent(document, tokens, index), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_array_index(parent, last, index, appending=False))
    raise _refused(index, f"no member {last!r}.")


def _put(document: Any, tokens: list[str], value: Any, index: int, *, insert: bool) -> Any:
    """`document` with `value` at `tokens`: inserted into an array (`add`) or in place of the
    element (`replace`); an object member is set either way (fast-json-patch's `replace` of a
    missing member adds it)."""
    if not tokens:
        return value
    parent, last = _parent(document, tokens, index), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        position = _array_index(parent, last, index, appending=insert)
        if insert:
            parent.insert(position, value)
        else:
            parent[position] = value
    else:
        raise _refused(index, f"no member {last!r}.")
    return document


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str))


def apply_json_patch(document: Any, operations: Sequence[Mapping[str, Any]]) -> Any:
    """A copy of `document` with the `operations` (validated `patchSchema`s) applied in order;
    the document itself is left as it was. What the operations add is counted as it goes: a
    document that would outgrow a request body is refused before it is built (`copy` doubles
    a list at each step)."""
    limit = settings.MAX_REQUEST_BODY_BYTES
    result = copy.deepcopy(document)
    grown = _size(result)
    for index, operation in enumerate(operations):
        op, tokens = operation["op"], _tokens(operation["path"], index)
        if op == "test":
            if _get(result, tokens, index) != operation.get("value"):
                raise _refused(index, f"test of {operation['path']} failed.")
        elif op == "remove":
            _remove(result, tokens, index)
        elif op in ("add", "replace"):
            value = operation.get("value")
            grown = _grow(grown, value, limit, index)
            result = _put(result, tokens, copy.deepcopy(value), index, insert=op == "add")
        else:
            source = _tokens(operation.get("from", ""), index)
            if op == "move":
                value = _remove(result, source, index)
            else:
                value = _get(result, source, index)
                grown = _grow(grown, value, limit, index)
                value = copy.deepcopy(value)
            result = _put(result, tokens, value, index, insert=True)
    return result


def _grow(grown: int, value: Any, limit: int, index: int) -> int:
    grown += _size(value)
    if grown > limit:
        raise _refused(index, f"the document would grow past {limit} bytes.")
    return grown
