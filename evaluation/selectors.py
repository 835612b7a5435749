"""What the playground reads: an environment's client payload and, from the same snapshot, what
SDKs are not sent but the playground shows (strategy ids, titles, paused strategies, segments by
name, variants as stored)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import orjson

from client_api.selectors import client_feature_list
from evaluation.engine import features_digest
from features.models import FeatureEnvironment, FeatureStrategy, FeatureStrategySegment, Segment
from flagadmin.core.db import read_snapshot
from projects.models import Environment


@dataclass(frozen=True, slots=True)
class StrategyDetails:
    id: str
    name: str
    title: str | None
    disabled: bool
    parameters: dict[str, str]
    constraints: list[dict[str, Any]]
    variants: list[dict[str, Any]]
    segments: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SegmentDetails:
    id: int
    name: str
    constraints: list[dict[str, Any]]


@dataclass(frozen=True)
class EnvironmentSnapshot:
    """One environment as one snapshot of the database saw it."""

    environment: str
    exists: bool
    # The client payload's flags (every project), as `client_feature_list` builds them.
    features: list[dict[str, Any]]
    # Each flag's strategies in the environment, paused ones included, in the payload's order.
    strategies: dict[str, tuple[StrategyDetails, ...]]
    # Each flag's variants in the environment, as stored.
    variants: dict[str, list[dict[str, Any]]]
    segments: dict[int, SegmentDetails]

    @cached_property
    def digest(self) -> str:
        """The payload's `features_digest`: equal to a `PayloadEngine`'s when it holds these
        flags."""
        return features_digest(self.features)

    @cached_property
    def body(self) -> bytes:
        return orjson.dumps({"version": 2, "features": self.features})


def environment_snapshot(environment: str) -> EnvironmentSnapshot:
    """`environment`'s flags, strategies and segments, read from one snapshot. Nine queries
    whatever the number of flags."""
    with read_snapshot():
        exists = Environment.objects.filter(pk=environment).exists()
        features = client_feature_list(projects=("*",), environment=environment)
        active = FeatureStrategy.objects.filter(
            feature_environment__environment_id=environment,
            feature_environment__feature__archived_at__isnull=True,
        )
        rows = active.order_by("sort_order", "created_at", "id").values_list(
            "id",
            "feature_environment__feature_id",
            "name",
            "title",
            "disabled",
            "parameters",
            "constraints",
            "variants",
        )
        rows = list(rows)
        links = FeatureStrategySegment.objects.filter(
            strategy__feature_environment__environment_id=environment
        ).values_list("strategy_id", "segment_id")
        segments_of: dict[Any, list[int]] = defaultdict(list)
        for strategy_id, segment_id in links.order_by("id"):
            segments_of[strategy_id].append(segment_id)
        used = {segment for found in segments_of.values() for segment in found}
        segments = {
            segment_id: SegmentDetails(segment_id, name, constraints)
            for segment_id, name, constraints in Segment.objects.filter(pk__in=used).values_list(
                "id", "name", "constraints"
            )
        }
        variants = dict(
            FeatureEnvironment.objects.filter(
                environment_id=environment, feature__archived_at__isnull=True
            ).values_list("feature_id", "variants")
        )
    strategies: dict[str, list[StrategyDetails]] = defaultdict(list)
    for (
        strategy_id,
        flag,
        name,
        title,
        disabled,
        parameters,
        constraints,
        strategy_variants,
    ) in rows:
        strategies[flag].append(
            StrategyDetails(
                id=str(strategy_id),
                name=name,
                title=title,
                disabled=disabled,
                parameters=parameters,
                constraints=constraints,
                variants=strategy_variants,
                segments=tuple(
                    segment for segment in segments_of.get(strategy_id, ()) if segment in segments
                ),
            )
        )
    return EnvironmentSnapshot(
        environment=environment,
        exists=exists,
        features=features,
        strategies={flag: tuple(found) for flag, found in strategies.items()},
        variants=variants,
        segments=segments,
    )
