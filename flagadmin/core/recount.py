"""What the repair commands share: the figures the database keeps, compared with a recount from
the rows (`features.project_stats`, `projects.member_stats`)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def differing(actual: Mapping[K, int], kept: Mapping[K, int]) -> dict[K, tuple[int, int]]:
    """The keys whose kept total differs from the recounted one, as (kept, actual); a key
    missing on either side counts as 0."""
    return {
        key: (kept.get(key, 0), actual.get(key, 0))
        for key in actual.keys() | kept.keys()
        if kept.get(key, 0) != actual.get(key, 0)
    }
