"""Which segments a strategy uses, set as a whole (Unleash's `updateFeatureStrategySegments`).

Unleash 8.2 writes the links and nothing else: no event (so SDKs polling by revision keep the old
state until some other change), no check that the strategy is in the project whose permission it
asked, and a 500 for an unknown strategy or segment. Here the strategy must be the project's, in
that environment, of an active flag (404 otherwise); the segments must exist and be usable by
the project (400); and the change is recorded as any other change of the strategy,
`feature-strategy-update` with the strategy before and after, in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction

from features.limits import strategy_segments_problem
from features.locks import lock_flag_environment, lock_strategy
from features.models import Feature, FeatureStrategy
from features.strategy_services import (
    FEATURE_STRATEGY_UPDATE,
    record_strategy_event,
    replace_strategy_segments,
    strategy_event_data,
)
from flagadmin.core.actors import Actor
from flagadmin.core.errors import InvalidInputError, NotFoundError

# The body's name for the list, which refusals point at.
FIELD = "segmentIds"


def strategy_not_found(strategy_id: str) -> NotFoundError:
    return NotFoundError(f"Could not find strategy with id {strategy_id}")


def find_strategy(*, project_id: str, environment: str, strategy_id: str) -> FeatureStrategy:
    """The strategy `strategy_id` of an active flag of the project in `environment`; 404
    otherwise (an id that is no UUID included)."""
    try:
        key = uuid.UUID(strategy_id)
    except ValueError:
        raise strategy_not_found(strategy_id) from None
    strategy = (
        FeatureStrategy.objects.filter(
            pk=key,
            feature_environment__environment_id=environment,
            feature_environment__feature__project_id=project_id,
            feature_environment__feature__archived_at__isnull=True,
        )
        .select_related("feature_environment__feature")
        .first()
    )
    if strategy is None:
        raise strategy_not_found(strategy_id)
    return strategy


def set_strategy_segments(
    *, strategy: FeatureStrategy, segment_ids: Sequence[int], actor: Actor
) -> FeatureStrategy:
    """Make the strategy use exactly `segment_ids` (a repeated id counts once), under the locks
    every strategy writer takes (its flag environment, then the strategy); records
    `feature-strategy-update`, or nothing when they are the ones it uses already."""
    feature: Feature = strategy.feature_environment.feature
    environment = strategy.feature_environment.environment_id
    wanted = list(dict.fromkeys(segment_ids))
    with transaction.atomic():
        lock_flag_environment(feature, environment)
        strategy = lock_strategy(strategy)
        # Unleash's limit (`features.limits`), on the distinct ids, at the body's name for them.
        if problem := strategy_segments_problem(wanted):
            raise InvalidInputError.at([FIELD], problem)
        if set(wanted) == set(strategy.segment_ids):
            return strategy
        before = strategy_event_data(strategy)
        replace_strategy_segments(strategy, wanted, project_id=feature.project_id, field=FIELD)
        record_strategy_event(
            FEATURE_STRATEGY_UPDATE,
            feature=feature,
            environment=environment,
            actor=actor,
            strategy=strategy,
            before=before,
        )
    return strategy
