"""Cloning a flag (Unleash's `cloneFeatureToggle`): one transaction that creates the copy and
writes every event of it."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Prefetch

from features.dependency_services import add_feature_dependency
from features.models import Feature, FeatureEnvironment, FeatureStrategy
from features.services import create_feature
from features.strategy_services import add_feature_strategy
from flagadmin.core.actors import Actor


def clone_feature(
    *, source: Feature, name: str, replace_group_id: bool = True, actor: Actor
) -> Feature:
    """Create flag `name` in the source's project as a copy of `source`, as Unleash does: the
    same type, description, impression data and stale state (`feature-created`, which shows
    the copy stale when it is, and no `feature-stale-on`); the same dependencies on parents
    (`feature-dependency-added` each); each environment's variants (no event, as Unleash);
    and each environment's strategies with their title, paused state, sort order,
    parameters, constraints, variants and segments (`feature-strategy-add` each), a
    `groupId` parameter set to the new name unless `replace_group_id` is false. Not copied,
    as Unleash: the environments' enabled state (the copy is off everywhere), tags, creation
    time, creator (the one who clones), lifecycle stage (`initial`). A taken name is 409
    `NameExistsError` and nothing is written."""
    with transaction.atomic():
        strategies = Prefetch(
            "strategies",
            queryset=FeatureStrategy.objects.prefetch_related("segment_links").order_by(
                "sort_order", "created_at", "id"
            ),
            to_attr="strategy_list",
        )
        environments = list(
            FeatureEnvironment.objects.filter(feature=source)
            .order_by("environment_id")
            .prefetch_related(strategies)
        )
        parents = list(source.dependencies.order_by("parent_id"))
        created = create_feature(
            project_id=source.project_id,
            name=name,
            type=source.type,
            description=source.description,
            impression_data=source.impression_data,
            stale=source.stale,
            actor=actor,
        )
        for dependency in parents:
            add_feature_dependency(
                project_id=source.project_id,
                child_name=name,
                parent_name=dependency.parent_id,
                enabled=dependency.enabled,
                variants=list(dependency.variants),
                actor=actor,
            )
        # Only the environments the copy has (those its project uses now).
        copied = set(
            FeatureEnvironment.objects.filter(feature=created).values_list(
                "environment_id", flat=True
            )
        )
        for entry in environments:
            if entry.environment_id not in copied:
                continue
            if entry.variants:
                FeatureEnvironment.objects.filter(
                    feature=created, environment_id=entry.environment_id
                ).update(variants=entry.variants)
            for strategy in entry.strategy_list:
                parameters = dict(strategy.parameters)
                if replace_group_id and "groupId" in parameters:
                    parameters["groupId"] = name
                add_feature_strategy(
                    feature=created,
                    environment=entry.environment_id,
                    name=strategy.name,
                    parameters=parameters,
                    constraints=strategy.constraints,
                    variants=strategy.variants,
                    segments=[link.segment_id for link in strategy.segment_links.all()],
                    title=strategy.title,
                    disabled=strategy.disabled,
                    sort_order=strategy.sort_order,
                    actor=actor,
                )
    return created
