"""Per-flag resource limits, as Unleash 8.2 applies them (its `resourceLimits`, reported by
`/api/admin/ui-config`), each configurable with Unleash's environment variable (see
`flagadmin.settings`):

- strategies per flag environment (`featureEnvironmentStrategies`, 30): checked when a strategy
  is added, under the flag environment's lock, never on an update;
- constraints per strategy (`constraints`, 30) and values per constraint (`constraintValues`,
  250): an update that does not grow a list already over the limit is allowed, as Unleash's
  `validateConstraintsLimit` allows it (a limit lowered after the list was stored);
- segments per strategy (`strategySegments`, 5) and values per segment, summed over its
  constraints (`segmentValues`, 1000);
- segments per instance (`segments`, 300): checked when a segment is created.

There is no limit on the number of flags. One rule each, here, for every write path: the API's
strategy endpoints (through `features.strategy_services`) and the Django admin's strategy and
segment forms. The refusals are Unleash's: `LimitExceededError` (its 400 `ExceedsLimitError`)
for the first three, its plain 400 wording for the segment ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from flagadmin.core.errors import InvalidInputError, LimitExceededError


@dataclass(frozen=True)
class ResourceLimits:
    feature_environment_strategies: int
    constraints: int
    constraint_values: int
    strategy_segments: int
    segment_values: int
    segments: int


def resource_limits() -> ResourceLimits:
    """The limits in force (read from the settings each time: tests override them)."""
    return ResourceLimits(
        feature_environment_strategies=settings.FEATURE_ENVIRONMENT_STRATEGIES_LIMIT,
        constraints=settings.CONSTRAINTS_LIMIT,
        constraint_values=settings.CONSTRAINT_VALUES_LIMIT,
        strategy_segments=settings.STRATEGY_SEGMENTS_LIMIT,
        segment_values=settings.SEGMENT_VALUES_LIMIT,
        segments=settings.SEGMENTS_LIMIT,
    )


def check_strategy_count(existing_count: int) -> None:
    """Before adding a strategy to a flag environment holding `existing_count` (read under its
    lock): refused at the limit, as Unleash's `validateStrategyLimit`."""
    limit = resource_limits().feature_environment_strategies
    if existing_count >= limit:
        raise LimitExceededError("strategy", limit)


def check_constraints(updated: Sequence[Any], existing: Sequence[Any] = ()) -> None:
    """The constraints of a strategy about to be stored (`existing`: what it held before, for
    an update), as Unleash's `validateConstraintsLimit`: more than the limit only when not more
    than before; a constraint's values over theirs only when the list keeps its length and
    that constraint (by position) had as many or more. Items that are not objects are left to
    the shape checks."""
    limits = resource_limits()
    if len(updated) > limits.constraints and len(updated) > len(existing):
        raise LimitExceededError("constraints", limits.constraints)
    same_length = len(updated) == len(existing)
    for index, constraint in enumerate(updated):
        values = constraint.get("values") if isinstance(constraint, dict) else None
        if not isinstance(values, list) or len(values) <= limits.constraint_values:
            continue
        before = existing[index] if same_length else None
        before_values = before.get("values") if isinstance(before, dict) else None
        if isinstance(before_values, list) and len(before_values) >= len(values):
            continue
        raise LimitExceededError(
            f"constraint values for {constraint.get('contextName')}", limits.constraint_values
        )


def strategy_segments_problem(segment_ids: Sequence[int]) -> str | None:
    """Unleash's refusal of a strategy naming more segments than the limit, or None (checked
    on additions and updates alike, as Unleash's `updateStrategySegments`)."""
    limit = resource_limits().strategy_segments
    if len(set(segment_ids)) > limit:
        return f"Strategies may not have more than {limit} segments"
    return None


def check_strategy_segments(segment_ids: Sequence[int]) -> None:
    if problem := strategy_segments_problem(segment_ids):
        raise InvalidInputError.at(["segments"], problem)


def segment_values_problem(constraints: Any) -> str | None:
    """Unleash's refusal of a segment whose constraints hold more values in all than the
    limit, or None."""
    limit = resource_limits().segment_values
    if not isinstance(constraints, list):
        return None
    total = sum(
        len(item["values"])
        for item in constraints
        if isinstance(item, dict) and isinstance(item.get("values"), list)
    )
    if total > limit:
        return f"Segments may not have more than {limit} values"
    return None


def check_segment_count(existing_count: int) -> None:
    """Before creating a segment when `existing_count` exist: refused at the limit, as
    Unleash's `validateSegmentLimit`."""
    limit = resource_limits().segments
    if existing_count >= limit:
        raise LimitExceededError("segment", limit)
