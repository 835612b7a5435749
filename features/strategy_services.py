"""Flags in an environment: turning them on and off, and their activation strategies. Each
function is one transaction that also writes its audit event (Unleash's event types)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Max

from definitions.selectors import hold_legal_values, hold_strategy_definition
from features.limits import check_constraints, check_strategy_count, check_strategy_segments
from features.locks import (
    lock_flag_environment,
    lock_named_flags,
    lock_strategy,
)
from features.models import (
    Feature,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureStrategySegment,
    Segment,
)
from features.segment_services import project_segments_problem
from features.services import (
    FEATURE_ENVIRONMENT_DISABLED,
    FEATURE_ENVIRONMENT_ENABLED,
    tags_of,
)
from features.validators import SINGLE_VALUE_OPERATORS, SORT_ORDER_MAX
from features.variants import fix_variant_weights
from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.db import atomic_retrying_conflicts
from flagadmin.core.errors import ArchivedError, InvalidInputError, NotFoundError, Problem


class Unchanged:
    """The value of a field a caller leaves as it is (where None is a value of its own)."""


UNCHANGED = Unchanged()

FEATURE_STRATEGY_ADD = "feature-strategy-add"
FEATURE_STRATEGY_UPDATE = "feature-strategy-update"
FEATURE_STRATEGY_REMOVE = "feature-strategy-remove"
STRATEGY_ORDER_CHANGED = "strategy-order-changed"


def strategy_event_data(strategy: FeatureStrategy) -> dict:
    """A strategy as Unleash's `feature-strategy-*` events carry it."""
    return {
        "id": str(strategy.id),
        "name": strategy.name,
        "title": strategy.title,
        "disabled": strategy.disabled,
        "constraints": strategy.constraints,
        "parameters": strategy.parameters,
        "variants": strategy.variants,
        "sortOrder": strategy.sort_order,
        "segments": sorted(strategy.segment_ids),
    }


def record_strategy_event(
    event_type: str,
    *,
    feature: Feature,
    environment: str,
    actor: Actor,
    strategy: FeatureStrategy | None = None,
    before: dict | None = None,
) -> None:
    """A `feature-strategy-*` event: the strategy as it is now (`strategy`, with its
    `segment_ids`) and as it was (`before`), with the flag's scope and tags."""
    record_event(
        event_type,
        actor=actor,
        project=feature.project_id,
        feature_name=feature.name,
        environment=environment,
        data=strategy_event_data(strategy) if strategy is not None else None,
        pre_data=before,
        tags=tags_of(feature),
    )


def check_segments_usable(
    segment_ids: Sequence[int], *, project_id: str, field: str = "segments"
) -> None:
    """The segments exist and the project may use them (400 at `field`, the body's name for the
    list), each locked until the commit: a segment's project cannot change meanwhile (its
    writer locks it)."""
    segments = Segment.objects.select_for_update(no_key=True).filter(pk__in=segment_ids)
    known = set(segments.order_by("pk").values_list("pk", flat=True))
    missing = [segment_id for segment_id in segment_ids if segment_id not in known]
    if missing:
        raise InvalidInputError(Problem.of([field], f"names unknown segments: {missing}"))
    if problem := project_segments_problem(project_id, segment_ids):
        raise InvalidInputError.at([field], problem)


def replace_strategy_segments(
    strategy: FeatureStrategy,
    segment_ids: Sequence[int],
    *,
    project_id: str,
    field: str = "segments",
) -> None:
    """Make the strategy (locked by the caller) use exactly `segment_ids` (distinct), once they
    are found usable by the project (`check_segments_usable`, 400 at `field`); the caller
    records the strategy's event."""
    check_segments_usable(segment_ids, project_id=project_id, field=field)
    FeatureStrategySegment.objects.filter(strategy=strategy).delete()
    FeatureStrategySegment.objects.bulk_create(
        [FeatureStrategySegment(strategy=strategy, segment_id=s) for s in segment_ids]
    )
    strategy.segment_ids = list(segment_ids)


def _new_strategy(
    *,
    feature_environment: FeatureEnvironment,
    name: str,
    parameters: dict[str, str],
    constraints: list[dict],
    variants: list[dict],
    segments: Sequence[int],
    title: str | None,
    disabled: bool,
    sort_order: int | None,
    actor: Actor,
) -> FeatureStrategy:
    """Insert a strategy and its `feature-strategy-add` event; call inside a transaction that
    holds the flag environment's lock (so two additions never take the same sort order)."""
    feature = feature_environment.feature
    # Unleash's limits (`features.limits`): the count read under the lock the caller holds.
    check_strategy_count(feature_environment.strategies.count())
    check_constraints(constraints)
    check_strategy_segments(segments)
    if sort_order is None:
        # As Unleash: after the last strategy of the environment (0 for the first one). At the
        # column's limit it takes the last one's place: ties sort by creation, so still last.
        highest = feature_environment.strategies.aggregate(Max("sort_order"))["sort_order__max"]
        sort_order = 0 if highest is None else min(highest + 1, SORT_ORDER_MAX)
    strategy = FeatureStrategy.objects.create(
        feature_environment=feature_environment,
        name=name,
        title=title,
        disabled=disabled,
        sort_order=sort_order,
        parameters=with_default_parameters(name, parameters, feature),
        constraints=constraints,
        variants=fix_variant_weights(variants),
    )
    segment_ids = list(dict.fromkeys(segments))
    if segment_ids:
        check_segments_usable(segment_ids, project_id=feature.project_id)
        FeatureStrategySegment.objects.bulk_create(
            [FeatureStrategySegment(strategy=strategy, segment_id=s) for s in segment_ids]
        )
    strategy.segment_ids = segment_ids
    record_strategy_event(
        FEATURE_STRATEGY_ADD,
        feature=feature,
        environment=feature_environment.environment_id,
        actor=actor,
        strategy=strategy,
    )
    return strategy


def with_default_parameters(name: str, parameters: dict[str, str], feature: Feature) -> dict:
    """Unleash fills in what a `flexibleRollout` leaves out: the flag's name as `groupId`, the
    project's default stickiness, and a rollout of 100 %."""
    if name != "flexibleRollout":
        return dict(parameters)
    filled = dict(parameters)
    filled.setdefault("rollout", "100")
    if not filled.get("groupId"):
        filled["groupId"] = feature.name
    if not filled.get("stickiness"):
        filled["stickiness"] = feature.project.default_stickiness or "default"
    return filled


def set_feature_environment_enabled(
    *,
    feature: Feature,
    environment: str,
    enabled: bool,
    actor: Actor,
    activate_disabled_strategies: bool = False,
) -> bool:
    """Turn the flag on or off in `environment`, recording `feature-environment-enabled` or
    `-disabled` (Unleash's names). Turning it on, as Unleash's `updateEnabled` does: with
    `activate_disabled_strategies` (Unleash's `shouldActivateDisabledStrategies`, which its UI
    sends) its paused strategies are enabled again (a `feature-strategy-update` each);
    otherwise, when no strategy of it there is enabled, Unleash's default is added first, a
    `flexibleRollout` at 100 % (`feature-strategy-add`): on with only paused strategies would
    serve the flag to everyone. Setting the state the flag already has records nothing (the
    strategies are still enabled or added, as Unleash does). Returns whether the state changed.

    The one place that switches a flag environment: the API's on/off, the Django admin's
    bulk actions and inline edits, and strategy deletion and pausing all come through it.
    Raises FeatureEnvironmentNotFound (a 404, and a FeatureEnvironment.DoesNotExist) when the
    flag has no entry for that environment (its project does not use it)."""
    with transaction.atomic():
        # Locked: two toggles of the same row record one event each, in order.
        feature_environment = lock_flag_environment(feature, environment)
        if enabled:
            _ensure_enabled_strategy(feature_environment, activate_disabled_strategies, actor)
        if feature_environment.enabled == enabled:
            return False
        FeatureEnvironment.objects.filter(pk=feature_environment.pk).update(enabled=enabled)
        feature_environment.enabled = enabled
        record_event(
            FEATURE_ENVIRONMENT_ENABLED if enabled else FEATURE_ENVIRONMENT_DISABLED,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            environment=environment,
            tags=tags_of(feature),
        )
    return True


def set_features_environment_enabled(
    *,
    project_id: str,
    names: Sequence[str],
    environment: str,
    enabled: bool,
    actor: Actor,
    activate_disabled_strategies: bool = False,
) -> None:
    """Turn the named flags of the project on or off in `environment`, each as
    `set_feature_environment_enabled`, all or none (Unleash's bulk toggle, one transaction):
    404 for a name that is no flag of the project, Unleash's 400 `ArchivedFeatureError` for
    an archived one, 404 for a flag without that environment."""

    def toggle_all() -> None:
        flags = lock_named_flags(project_id, names)
        for name in dict.fromkeys(names):
            feature = flags.get(name)
            if feature is None or feature.project_id != project_id:
                elsewhere = (
                    f', but there\'s a feature with that name in project "{feature.project_id}"'
                    if feature is not None
                    else "."
                )
                raise NotFoundError(
                    f'There\'s no feature named "{name}" in project "{project_id}"{elsewhere}'
                )
            if feature.archived_at is not None:
                raise ArchivedError()
            set_feature_environment_enabled(
                feature=feature,
                environment=environment,
                enabled=enabled,
                actor=actor,
                activate_disabled_strategies=activate_disabled_strategies,
            )

    atomic_retrying_conflicts(toggle_all)


def _ensure_enabled_strategy(
    feature_environment: FeatureEnvironment, activate_disabled: bool, actor: Actor
) -> None:
    """Before turning a flag environment (locked) on: its paused strategies enabled again when
    asked, else Unleash's default strategy when none of them is enabled."""
    feature = feature_environment.feature
    # Not locked: every strategy writer holds the flag environment's lock first.
    strategies = list(
        feature_environment.strategies.order_by("sort_order", "created_at", "id").prefetch_related(
            "segment_links"
        )
    )
    paused = [strategy for strategy in strategies if strategy.disabled]
    if activate_disabled and paused:
        for strategy in paused:
            strategy.segment_ids = [link.segment_id for link in strategy.segment_links.all()]
            before = strategy_event_data(strategy)
            FeatureStrategy.objects.filter(pk=strategy.pk).update(disabled=False)
            strategy.disabled = False
            record_strategy_event(
                FEATURE_STRATEGY_UPDATE,
                feature=feature,
                environment=feature_environment.environment_id,
                actor=actor,
                strategy=strategy,
                before=before,
            )
        return
    if len(paused) < len(strategies):
        return
    _new_strategy(
        feature_environment=feature_environment,
        name="flexibleRollout",
        # Unleash's default strategy names its stickiness, not the project's default.
        parameters={"rollout": "100", "stickiness": "default", "groupId": feature.name},
        constraints=[],
        variants=[],
        segments=[],
        title=None,
        disabled=False,
        sort_order=None,
        actor=actor,
    )


def add_feature_strategy(
    *,
    feature: Feature,
    environment: str,
    name: str,
    parameters: dict[str, str],
    constraints: list[dict],
    variants: list[dict],
    segments: Sequence[int] = (),
    title: str | None = None,
    disabled: bool = False,
    sort_order: int | None = None,
    actor: Actor,
) -> FeatureStrategy:
    """Add a strategy to the flag in `environment`; records `feature-strategy-add`."""
    with transaction.atomic():
        feature_environment = lock_flag_environment(feature, environment)
        check_definitions(name, constraints)
        return _new_strategy(
            feature_environment=feature_environment,
            name=name,
            parameters=parameters,
            constraints=constraints,
            variants=variants,
            segments=segments,
            title=title,
            disabled=disabled,
            sort_order=sort_order,
            actor=actor,
        )


def as_unleash_put(definition: dict[str, Any], sent: Mapping[str, Any]) -> dict[str, Any]:
    """`update_feature_strategy`'s keywords for a strategy replaced as Unleash's PUT replaces it
    (its store writes only the fields sent): `disabled` and `title` null or left out of `sent`,
    and `segments` left out, stay as stored; the sort order never moves this way."""
    definition = {**definition, "sort_order": None}
    if sent.get("disabled") is None:
        definition["disabled"] = None
    if sent.get("title") is None:
        definition["title"] = UNCHANGED
    if "segments" not in sent:
        definition["segments"] = None
    return definition


def update_feature_strategy(
    *,
    feature: Feature,
    environment: str,
    strategy: FeatureStrategy,
    name: str,
    parameters: dict[str, str],
    constraints: list[dict],
    variants: list[dict],
    segments: Sequence[int] | None = None,
    title: str | Unchanged | None = UNCHANGED,
    disabled: bool | None = None,
    sort_order: int | None = None,
    actor: Actor,
) -> FeatureStrategy:
    """Replace the strategy's definition as Unleash's PUT does: name, parameters, constraints
    and variants as given; `title`, `disabled` (None) and `segments` (None) left as they are
    unless given; `sort_order` (None) too (the API's PUT never moves a strategy, as Unleash's
    does not). Records `feature-strategy-update` with the strategy before and after, or
    nothing when nothing changed."""
    with transaction.atomic():
        # The flag environment first, then the strategy: every strategy writer's order.
        lock_flag_environment(feature, environment)
        strategy = lock_strategy(strategy)
        check_definitions(name, constraints)
        # Unleash's limits (`features.limits`): a list over one may stay as long as it was.
        check_constraints(constraints, existing=strategy.constraints)
        if segments is not None:
            check_strategy_segments(segments)
        before = strategy_event_data(strategy)
        strategy.name = name
        strategy.parameters = with_default_parameters(name, parameters, feature)
        strategy.constraints = constraints
        strategy.variants = fix_variant_weights(variants)
        if title is not UNCHANGED:
            strategy.title = title
        if disabled is not None:
            strategy.disabled = disabled
        if sort_order is not None:
            strategy.sort_order = sort_order
        strategy.save()
        segment_ids = strategy.segment_ids if segments is None else list(dict.fromkeys(segments))
        if segment_ids != strategy.segment_ids:
            replace_strategy_segments(strategy, segment_ids, project_id=feature.project_id)
        record_strategy_event(
            FEATURE_STRATEGY_UPDATE,
            feature=feature,
            environment=environment,
            actor=actor,
            strategy=strategy,
            before=before,
        )
        if strategy.disabled:
            _turn_off_without_enabled_strategy(feature, environment, actor)
    return strategy


def update_feature_strategy_from_stored(
    *,
    feature: Feature,
    environment: str,
    change: Callable[[], tuple[FeatureStrategy, dict[str, Any]]],
    actor: Actor,
) -> FeatureStrategy:
    """`update_feature_strategy` for a change computed from the strategy as stored (a JSON
    Patch): `change()` finds the strategy and returns it with its new definition (the keywords
    of `update_feature_strategy`), under the flag environment's lock, which every strategy
    writer takes first. So a concurrent change applies to what this one stored, not to the
    same old state, and neither is lost."""
    with transaction.atomic():
        lock_flag_environment(feature, environment)
        strategy, definition = change()
        return update_feature_strategy(
            feature=feature, environment=environment, strategy=strategy, **definition, actor=actor
        )


def _turn_off_without_enabled_strategy(feature: Feature, environment: str, actor: Actor) -> None:
    """As Unleash after a strategy is paused or deleted: a flag environment left without an
    enabled strategy is turned off (`feature-environment-disabled`). On with none would serve
    the flag to everyone; Unleash shows it off, and so do SDKs."""
    feature_environment = lock_flag_environment(feature, environment)
    if (
        feature_environment.enabled
        and not feature_environment.strategies.filter(disabled=False).exists()
    ):
        set_feature_environment_enabled(
            feature=feature, environment=environment, enabled=False, actor=actor
        )


def delete_feature_strategy(
    *, feature: Feature, environment: str, strategy: FeatureStrategy, actor: Actor
) -> None:
    """Remove the strategy; records `feature-strategy-remove` with the strategy as it was.
    When no enabled strategy is left, the flag is turned off in the environment (with its
    `feature-environment-disabled` event), as Unleash does: enabled without a strategy would
    mean on for nobody while looking on."""
    with transaction.atomic():
        # The flag environment first, then the strategy: every strategy writer's order.
        lock_flag_environment(feature, environment)
        strategy = lock_strategy(strategy)
        before = strategy_event_data(strategy)
        strategy.delete()
        record_strategy_event(
            FEATURE_STRATEGY_REMOVE,
            feature=feature,
            environment=environment,
            actor=actor,
            before=before,
        )
        _turn_off_without_enabled_strategy(feature, environment, actor)


def set_strategy_sort_order(
    *, feature: Feature, environment: str, sort_orders: Sequence[tuple[str, int]], actor: Actor
) -> None:
    """Give the flag's strategies in `environment` new sort orders, `(strategy id, order)`
    pairs, as Unleash's `setStrategySortOrder`; records `strategy-order-changed` with the ids
    in their order before and after. An id that is not one of those strategies is refused
    and nothing changes."""
    with transaction.atomic():
        feature_environment = lock_flag_environment(feature, environment)
        # Not locked: every strategy writer holds the flag environment's lock first.
        ordered = feature_environment.strategies.order_by("sort_order", "created_at", "id")
        strategies = {str(s.pk): s for s in ordered}
        before = list(strategies)
        if any(strategy_id not in strategies for strategy_id, _ in sort_orders):
            raise InvalidInputError(
                Problem.of(
                    [],
                    "names a strategy that is not one of this flag's in this environment "
                    "(Unleash: trying to change strategies for environment via update "
                    "sortOrder)",
                )
            )
        for strategy_id, sort_order in sort_orders:
            FeatureStrategy.objects.filter(pk=strategies[strategy_id].pk).update(
                sort_order=sort_order
            )
        after = [str(pk) for pk in ordered.values_list("pk", flat=True)]
        record_event(
            STRATEGY_ORDER_CHANGED,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            environment=environment,
            data={"strategyIds": after},
            pre_data={"strategyIds": before},
            tags=tags_of(feature),
        )


# --- what the definitions app holds (strategy types, context fields' legal values) ---------------


def check_definitions(name: str, constraints: Sequence[dict]) -> None:
    """Unleash's checks of a strategy against the definitions: its type must exist (400 "Could
    not find strategy type", `validateStrategyType`), and a constraint on a context field that
    lists legal values may use only those (`validateLegalValues`). A constraint on a context
    field that does not exist is taken, as Unleash takes it. Call inside the write's
    transaction, after its flag environment's lock: the definitions read are held until the
    commit, so a delete of the type (or a change of the legal values) waits for the write and
    then sees it."""
    if not hold_strategy_definition(name):
        raise InvalidInputError(
            Problem.of(
                ["name"],
                "must name a strategy type of this instance (`GET /api/admin/strategies`)",
                refused=name,
            )
        )
    legal = hold_legal_values({c.get("contextName") for c in constraints if c.get("contextName")})
    problems = []
    for index, constraint in enumerate(constraints):
        allowed = legal.get(constraint.get("contextName"))
        if allowed is None:
            continue
        if (
            constraint.get("operator") in SINGLE_VALUE_OPERATORS
            or constraint.get("operator") == "REGEX"
        ):
            value = constraint.get("value")
            if value not in allowed:
                problems.append(
                    Problem.of(
                        ["constraints", str(index), "value"],
                        "is not specified as a legal value on this context field",
                        refused=value,
                    )
                )
        else:
            outside = [v for v in constraint.get("values") or [] if v not in allowed]
            if outside:
                problems.append(
                    Problem.of(
                        ["constraints", str(index), "values"],
                        "holds values not specified as legal values on this context field",
                        refused=outside,
                    )
                )
    if problems:
        raise InvalidInputError(*problems)


class ConstraintContextFieldUsage:
    """The definitions app's question (`definitions.usage`): which strategies of flags that are
    not archived have a constraint on a context field. Registered in `features.apps`."""

    @staticmethod
    def _with_constraints():
        return FeatureStrategy.objects.filter(
            feature_environment__feature__archived_at__isnull=True
        ).exclude(constraints=[])

    def is_used(self, context_name: str) -> bool:
        strategies = self._with_constraints()
        if connection.features.supports_json_field_contains:
            return strategies.filter(constraints__contains=[{"contextName": context_name}]).exists()
        return any(
            any(c.get("contextName") == context_name for c in constraints)
            for constraints in strategies.values_list("constraints", flat=True).iterator()
        )

    def strategies_using(self, context_name: str) -> list[dict[str, str]]:
        strategies = self._with_constraints()
        if connection.features.supports_json_field_contains:
            strategies = strategies.filter(constraints__contains=[{"contextName": context_name}])
        rows = strategies.order_by("feature_environment__feature_id", "sort_order", "created_at")
        fields = (
            "id",
            "feature_environment__feature__project_id",
            "feature_environment__feature_id",
            "name",
            "feature_environment__environment_id",
            "constraints",
        )
        return [
            {
                "id": str(strategy_id),
                "projectId": project_id,
                "featureName": feature_name,
                "strategyName": name,
                "environment": environment,
            }
            for strategy_id, project_id, feature_name, name, environment, constraints in (
                rows.values_list(*fields).iterator()
            )
            if any(c.get("contextName") == context_name for c in constraints)
        ]

    def strategy_type_used(self, strategy_name: str) -> bool:
        return FeatureStrategy.objects.filter(name=strategy_name).exists()

    def counts(self) -> dict[str, tuple[int, int]]:
        projects: dict[str, set[str]] = {}
        features: dict[str, set[str]] = {}
        rows = self._with_constraints().values_list(
            "feature_environment__feature__project_id",
            "feature_environment__feature_id",
            "constraints",
        )
        for project_id, feature_name, constraints in rows.iterator():
            for name in {c.get("contextName") for c in constraints if isinstance(c, dict)}:
                projects.setdefault(name, set()).add(project_id)
                features.setdefault(name, set()).add(feature_name)
        return {name: (len(projects[name]), len(features[name])) for name in features}
