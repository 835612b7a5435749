"""How a view finds the object its URL names: one helper, so every endpoint answers an unknown
object the same way (404 `NotFoundError` with the endpoint's own message). Each app wraps it in
a `get_<thing>_or_404` beside its views; services receive the object, never the URL's string."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from flagadmin.api.errors import NotFoundError
from flagadmin.api.fields import INT64_MAX

M = TypeVar("M", bound=Model)

_DIGITS = re.compile(r"[0-9]{1,19}")


def id_from_path(raw: str | int) -> int | None:
    """The row id a path segment names, or None when it can name no row (`abc`, `-1`, `0`,
    beyond 64 bits): such ids are a 404 like an unknown number, never a database error."""
    if isinstance(raw, str):
        if not _DIGITS.fullmatch(raw):
            return None
        raw = int(raw)
    return raw if 0 < raw <= INT64_MAX else None


def get_or_404(queryset: QuerySet[M], message: str, **lookup: Any) -> M:
    """The row of `queryset` that `lookup` names, else `NotFoundError(message)`. A lookup value
    of None (an id the URL cannot name, see `id_from_path`) finds nothing without a query."""
    found = None
    if all(value is not None for value in lookup.values()):
        found = queryset.filter(**lookup).first()
    if found is None:
        raise NotFoundError(message)
    return found
