"""The one way to turn objects into a response body, in the manner of Sentry's serializers: a
shape declares the body's fields (drf-spectacular documents it like any serializer) and fetches,
once for all the items of a response, what they need beyond their own columns (`get_attrs`);
`serialize` calls that hook once, then writes each item. The bodies encoded by orjson on the
hot paths stay outside it: docs/responses.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers

Attrs = Mapping[str, Any]

# One writer per shape for the calls without context, built on first use: DRF deep-copies a
# serializer's declared fields, nested shapes' included, on each instance, a cost per response
# that nothing in the body needs. Writing keeps no state on the writer, so threads share it.
_writers: dict[type[ResponseShape], ResponseShape] = {}


class ResponseShape(serializers.Serializer):
    # A response body's shape. Its fields read each item's attributes, and before them the
    # item's `attrs`, so a field may name a value `get_attrs` computed (a count, a related row).
    # No docstring: drf-spectacular would give it to every shape that has none of its own.

    def get_attrs(self, items: Sequence[Any]) -> Mapping[Any, Attrs]:
        """For each item that needs them, the values its fields read that are not its own,
        fetched for all `items` at once (one query, not one per item). `self.context` holds
        the keywords given to `serialize`."""
        return {}


class StoredList(serializers.ListSerializer):
    """A list kept in a JSON column already in the shape the body answers with (a context
    field's legal values, a strategy type's parameters): documented by its child, written as
    stored. The child's fields would write the keys an item leaves out as nulls. Used as the
    child's `Meta.list_serializer_class`."""

    def to_representation(self, data: Any) -> list[Any]:
        return list(data)


class _WithAttrs:
    """An item seen through its attrs: the attrs first, then the item's own attributes."""

    __slots__ = ("_attrs", "_item")

    def __init__(self, item: Any, attrs: Attrs) -> None:
        self._item = item
        self._attrs = attrs

    def __getattr__(self, name: str) -> Any:
        if name in self._attrs:
            return self._attrs[name]
        return getattr(self._item, name)


def serialize(items: Any, shape: type[ResponseShape], **context: Any) -> Any:
    """`items` (a list, tuple or queryset: a list of bodies) or one item (one body) written
    with `shape`: one instance of it for the whole response (one per process when there is no
    `context`), `get_attrs` called once with every item, then each item written in order.
    `context` is the shape's `self.context`."""
    single = not isinstance(items, list | tuple | QuerySet)
    item_list = [items] if single else list(items)
    writer = _writers.get(shape) if not context else None
    if writer is None:
        writer = shape(context=context)
        if not context:
            _writers[shape] = writer
    attrs = writer.get_attrs(item_list) if item_list else {}
    # An item without attrs is written as it is: seen through attrs, each of its fields would
    # first take a failed attribute lookup.
    bodies = [
        writer.to_representation(_WithAttrs(item, found) if (found := attrs.get(item)) else item)
        for item in item_list
    ]
    return bodies[0] if single else bodies
