"""Writing flags. Each function is one transaction that also writes its audit event."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone
from rest_framework.fields import DateTimeField

from features.models import (
    ClientInstance,
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureStrategy,
    FeatureStrategySegment,
    FeatureTag,
    FeatureType,
    FeatureUsageBucket,
    LifecycleStage,
    Segment,
    Tag,
)
from features.selectors import get_user_summary
from features.sql import (
    batches_statements,
    column,
    execute_statements,
    insert_statement,
    table,
    write_together,
)
from features.validators import SORT_ORDER_MAX
from flagadmin.api.errors import NameExistsError, NotFoundError, ValidationError
from flagadmin.api.principals import acting_user_id
from flagadmin.audit import build_event, record_event
from projects.models import Environment, Project, ProjectEnvironment

User = get_user_model()

FEATURE_CREATED = "feature-created"
FEATURE_ARCHIVED = "feature-archived"
FEATURE_METADATA_UPDATED = "feature-metadata-updated"
FEATURE_ENVIRONMENT_ENABLED = "feature-environment-enabled"
FEATURE_ENVIRONMENT_DISABLED = "feature-environment-disabled"
FEATURE_ENVIRONMENT_VARIANTS_UPDATED = "feature-environment-variants-updated"
FEATURE_TAGGED = "feature-tagged"
FEATURE_UNTAGGED = "feature-untagged"
FEATURE_DEPENDENCY_ADDED = "feature-dependency-added"
FEATURE_DEPENDENCY_REMOVED = "feature-dependency-removed"
FEATURE_DELETED = "feature-deleted"

_iso = DateTimeField().to_representation


def _name_taken_error(name: str) -> NameExistsError | None:
    archived_at = Feature.objects.filter(name=name).values_list("archived_at", flat=True)[:1]
    if not archived_at:
        return None
    if archived_at[0] is not None:
        return NameExistsError("An archived flag with that name already exists")
    return NameExistsError("A flag with that name already exists")


def _tags_of(feature: Feature) -> list[dict[str, str]]:
    """The flag's tags as audit events carry them."""
    pairs = (
        FeatureTag.objects.filter(feature=feature)
        .order_by("id")
        .values_list("tag__type_id", "tag__value")
    )
    return [{"type": tag_type, "value": value} for tag_type, value in pairs]


def _metadata(feature: Feature) -> dict:
    return {
        "name": feature.name,
        "description": feature.description,
        "type": feature.type,
        "project": feature.project_id,
        "stale": feature.stale,
        "impressionData": feature.impression_data,
    }


def _new_flag_environments(project: Project) -> list[Environment]:
    """The environments a new flag of `project` gets an entry for, in display order:
    those enabled in the project (`get_active_project` has loaded them already)."""
    loaded = getattr(project, "new_flag_environments", None)
    if loaded is not None:
        return loaded
    return [
        link.environment
        for link in ProjectEnvironment.objects.filter(project=project)
        .select_related("environment")
        .order_by("environment__sort_order", "environment__name")
    ]


def _ensure_tags(tags: Sequence[tuple[str, str]]) -> list[Tag]:
    """The Tag rows for (type, value) pairs, creating the values that are new. Concurrent
    creators of the same new value both succeed: the unique constraint makes one insert a
    no-op (ON CONFLICT DO NOTHING), and both then read the one row."""
    # One condition per tag type (a handful), not one per tag: SQLite caps expression depth.
    values_by_type: dict[str, set[str]] = {}
    for tag_type, value in tags:
        values_by_type.setdefault(tag_type, set()).add(value)
    match = Q()
    for tag_type, values in values_by_type.items():
        match |= Q(type_id=tag_type, value__in=sorted(values))
    found = {(t.type_id, t.value): t for t in Tag.objects.filter(match)}
    missing = [pair for pair in tags if pair not in found]
    if missing:
        Tag.objects.bulk_create(
            [Tag(type_id=tag_type, value=value) for tag_type, value in missing],
            ignore_conflicts=True,
        )
        found = {(t.type_id, t.value): t for t in Tag.objects.filter(match)}
    return [found[pair] for pair in tags]


def create_feature(
    *,
    project: Project,
    name: str,
    type: str = FeatureType.RELEASE,
    description: str | None = None,
    impression_data: bool = False,
    tags: Sequence[tuple[str, str]] = (),
    actor: object,
) -> Feature:
    """Create flag `name` in `project` with one disabled environment entry per environment
    enabled in the project, lifecycle stage `initial`, its tags (tag types must exist; new
    values are created), the acting user as creator, and one `feature-created` audit event.

    Raises NameExistsError when any flag, in any project, archived or not, has that name, also
    when a concurrent creation of the same name wins the race.

    Returns the flag with the attributes `FeatureSchemaSerializer` reads, built from what was
    written, so that answering costs no further queries.
    """
    now = timezone.now()
    creator_id = acting_user_id(actor)
    tags = list(dict.fromkeys(tags))
    environments = _new_flag_environments(project)
    feature = Feature(
        name=name,
        project=project,
        type=type,
        description=description or None,
        impression_data=impression_data,
        stale=False,
        created_at=now,
        created_by_id=creator_id,
    )
    stage = FeatureLifecycleStage(feature=feature, stage=LifecycleStage.INITIAL, entered_at=now)
    feature_environments = [
        FeatureEnvironment(feature=feature, environment=environment, enabled=False, variants=[])
        for environment in environments
    ]
    tag_list = [{"type": tag_type, "value": value} for tag_type, value in tags]
    event = build_event(
        FEATURE_CREATED,
        actor=actor,
        project=project.pk,
        feature_name=name,
        tags=tag_list,
        data={
            "name": name,
            "description": feature.description,
            "type": feature.type,
            "project": project.pk,
            "stale": False,
            "createdAt": _iso(now),
            "lastSeenAt": None,
            "impressionData": feature.impression_data,
            "archived": False,
        },
    )
    try:
        # One transaction writes the flag, its lifecycle stage, environments, tags and event.
        # The flag's row goes first: when its name is taken, the primary key refuses it before
        # anything else is written, and the whole write rolls back. Racing creations are
        # serialised by that key (PostgreSQL) or by the IMMEDIATE write lock (SQLite); the loser
        # gets the same 409 as a plain clash.
        rows = [[feature], [stage], feature_environments]
        if tags:
            # New tag values are created first, in the same transaction as the flag.
            with transaction.atomic():
                rows.append(
                    [
                        FeatureTag(feature=feature, tag=tag, created_by_user_id=creator_id)
                        for tag in _ensure_tags(tags)
                    ]
                )
                rows.append([event])
                statements = [insert_statement(r) for r in rows if r]
                execute_statements(statements, batched=batches_statements())
        else:
            rows.append([event])
            write_together([insert_statement(r) for r in rows if r])
    except IntegrityError:
        error = _name_taken_error(name)
        if error is None:
            raise
        raise error from None

    if isinstance(actor, User):
        creator = actor
    elif creator_id in getattr(project, "preloaded_users", {}):
        creator = project.preloaded_users[creator_id]
    else:
        creator = get_user_summary(creator_id)
    feature.created_by = creator
    for env in feature_environments:
        env.strategy_list = []
    feature.environment_list = feature_environments
    feature.tag_list = tag_list
    feature.current_stage = stage
    feature.dependency_list = []
    feature.child_names = []
    feature.is_favorite = False
    feature.collaborator_list = [creator] if creator is not None else []
    return feature


def archive_feature(*, feature: Feature, actor: object) -> None:
    """Archive the flag: its name stays taken, it leaves the project's active flags, it enters
    lifecycle stage `archived`, and its own dependencies on parents go. Archiving an archived
    flag changes nothing and records nothing."""
    now = timezone.now()
    with transaction.atomic():
        archived = Feature.objects.filter(pk=feature.pk, archived_at__isnull=True).update(
            archived_at=now
        )
        if not archived:
            return
        feature.archived_at = now
        FeatureLifecycleStage.objects.bulk_create(
            [FeatureLifecycleStage(feature=feature, stage=LifecycleStage.ARCHIVED, entered_at=now)],
            ignore_conflicts=True,
        )
        FeatureDependency.objects.filter(child=feature).delete()
        record_event(
            FEATURE_ARCHIVED,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            tags=_tags_of(feature),
        )


def update_feature_metadata(
    *,
    feature: Feature,
    description: str | None,
    type: str,
    stale: bool,
    impression_data: bool,
    actor: object,
) -> Feature:
    """Change what describes the flag; records `feature-metadata-updated` with the values
    before and after, or nothing when nothing changed."""
    with transaction.atomic():
        current = Feature.objects.select_for_update().get(pk=feature.pk)
        before = _metadata(current)
        current.description = description or None
        current.type = type
        current.stale = stale
        current.impression_data = impression_data
        current.save(update_fields=["description", "type", "stale", "impression_data"])
        record_event(
            FEATURE_METADATA_UPDATED,
            actor=actor,
            project=current.project_id,
            feature_name=current.name,
            data=_metadata(current),
            pre_data=before,
            tags=_tags_of(current),
        )
    return current


def set_feature_environment_variants(
    *, feature: Feature, environment: str, variants: list, actor: object
) -> None:
    """Replace the flag's variants in one environment; records
    `feature-environment-variants-updated` with the variants before and after."""
    with transaction.atomic():
        state = FeatureEnvironment.objects.select_for_update().get(
            feature=feature, environment_id=environment
        )
        before = state.variants
        state.variants = variants
        state.save(update_fields=["variants"])
        record_event(
            FEATURE_ENVIRONMENT_VARIANTS_UPDATED,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            environment=environment,
            data={"variants": variants},
            pre_data={"variants": before},
            tags=_tags_of(feature),
        )


def tag_feature(*, feature: Feature, tag: Tag, actor: object) -> None:
    """Tag the flag (`feature-tagged`); a tag it already has changes nothing."""
    with transaction.atomic():
        _, created = FeatureTag.objects.get_or_create(
            feature=feature, tag=tag, defaults={"created_by_user_id": acting_user_id(actor)}
        )
        if created:
            record_event(
                FEATURE_TAGGED,
                actor=actor,
                project=feature.project_id,
                feature_name=feature.name,
                data={"type": tag.type_id, "value": tag.value},
                tags=_tags_of(feature),
            )


def untag_feature(*, feature: Feature, tag: Tag, actor: object) -> None:
    """Remove a tag from the flag (`feature-untagged`)."""
    with transaction.atomic():
        tags_before = _tags_of(feature)
        deleted, _ = FeatureTag.objects.filter(feature=feature, tag=tag).delete()
        if deleted:
            record_event(
                FEATURE_UNTAGGED,
                actor=actor,
                project=feature.project_id,
                feature_name=feature.name,
                pre_data={"type": tag.type_id, "value": tag.value},
                tags=tags_before,
            )


def set_feature_dependency(
    *, child: Feature, parent: Feature, enabled: bool, variants: list, actor: object
) -> None:
    """Make `child` depend on `parent` (or change how): `feature-dependency-added`, as
    Unleash records both."""
    with transaction.atomic():
        FeatureDependency.objects.update_or_create(
            child=child, parent=parent, defaults={"enabled": enabled, "variants": variants}
        )
        record_event(
            FEATURE_DEPENDENCY_ADDED,
            actor=actor,
            project=child.project_id,
            feature_name=child.name,
            data={"feature": parent.name, "enabled": enabled, "variants": variants},
        )


def remove_feature_dependency(*, child: Feature, parent: Feature, actor: object) -> None:
    """`child` no longer depends on `parent`: `feature-dependency-removed`."""
    with transaction.atomic():
        deleted, _ = FeatureDependency.objects.filter(child=child, parent=parent).delete()
        if deleted:
            record_event(
                FEATURE_DEPENDENCY_REMOVED,
                actor=actor,
                project=child.project_id,
                feature_name=child.name,
                data={"feature": parent.name},
            )


def delete_archived_feature(*, feature: Feature, actor: object) -> None:
    """Delete an archived flag for good (`feature-deleted`), as Unleash allows only for
    archived flags. Raises ValueError for a flag that is not archived."""
    with transaction.atomic():
        current = Feature.objects.select_for_update().get(pk=feature.pk)
        if current.archived_at is None:
            raise ValueError("Only archived flags can be deleted.")
        tags = _tags_of(current)
        pre_data = {**_metadata(current), "archived": True}
        current.delete()  # (clears the primary key, the name: the event reads pre_data's)
        record_event(
            FEATURE_DELETED,
            actor=actor,
            project=pre_data["project"],
            feature_name=pre_data["name"],
            pre_data=pre_data,
            tags=tags,
        )


# --- environments and strategies ---------------------------------------------------------------

FEATURE_STRATEGY_ADD = "feature-strategy-add"
FEATURE_STRATEGY_UPDATE = "feature-strategy-update"
FEATURE_STRATEGY_REMOVE = "feature-strategy-remove"
FEATURE_REVIVED = "feature-revived"


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


class FeatureEnvironmentNotFound(NotFoundError, FeatureEnvironment.DoesNotExist):
    """The flag has no entry for that environment: 404 through the API, and the model's own
    DoesNotExist for callers such as the Django admin's bulk actions."""


def _locked_feature_environment(feature: Feature, environment: str) -> FeatureEnvironment:
    """The flag's entry for `environment`, locked until the transaction ends (404 when the
    flag has no entry there: the environment is unknown or not enabled in its project)."""
    found = (
        FeatureEnvironment.objects.select_for_update()
        .filter(feature=feature, environment_id=environment)
        .first()
    )
    if found is None:
        raise FeatureEnvironmentNotFound(
            f'Environment "{environment}" is not enabled in project "{feature.project_id}" '
            f'for flag "{feature.name}"'
        )
    found.feature = feature
    return found


def _check_segments(segment_ids: Sequence[int]) -> None:
    known = set(Segment.objects.filter(pk__in=segment_ids).values_list("pk", flat=True))
    missing = [segment_id for segment_id in segment_ids if segment_id not in known]
    if missing:
        raise ValidationError.for_property(
            "/body/segments", f"The `/body/segments` property names unknown segments: {missing}."
        )


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
    actor: object,
) -> FeatureStrategy:
    """Insert a strategy and its `feature-strategy-add` event; call inside a transaction that
    holds the flag environment's lock (so two additions never take the same sort order)."""
    feature = feature_environment.feature
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
        variants=variants,
    )
    segment_ids = list(dict.fromkeys(segments))
    if segment_ids:
        _check_segments(segment_ids)
        FeatureStrategySegment.objects.bulk_create(
            [FeatureStrategySegment(strategy=strategy, segment_id=s) for s in segment_ids]
        )
    strategy.segment_ids = segment_ids
    record_event(
        FEATURE_STRATEGY_ADD,
        actor=actor,
        project=feature.project_id,
        feature_name=feature.name,
        environment=feature_environment.environment_id,
        data=strategy_event_data(strategy),
        tags=_tags_of(feature),
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
    *, feature: Feature, environment: str, enabled: bool, actor: object
) -> bool:
    """Turn the flag on or off in `environment`, recording `feature-environment-enabled` or
    `-disabled` (Unleash's names). Turning on a flag that has no strategy there first adds
    Unleash's default, a `flexibleRollout` at 100 % (with its own `feature-strategy-add`
    event). Setting the state the flag already has changes and records nothing. Returns
    whether it changed.

    The one place that switches a flag environment: the API's on/off, the Django admin's
    bulk actions and inline edits, and strategy deletion all come through it. Raises
    FeatureEnvironmentNotFound (a 404, and a FeatureEnvironment.DoesNotExist) when the flag has
    no entry for that environment (its project does not use it)."""
    with transaction.atomic():
        # Locked: two toggles of the same row record one event each, in order.
        feature_environment = _locked_feature_environment(feature, environment)
        if feature_environment.enabled == enabled:
            return False
        if enabled and not feature_environment.strategies.exists():
            _new_strategy(
                feature_environment=feature_environment,
                name="flexibleRollout",
                parameters={},
                constraints=[],
                variants=[],
                segments=[],
                title=None,
                disabled=False,
                sort_order=None,
                actor=actor,
            )
        FeatureEnvironment.objects.filter(pk=feature_environment.pk).update(enabled=enabled)
        record_event(
            FEATURE_ENVIRONMENT_ENABLED if enabled else FEATURE_ENVIRONMENT_DISABLED,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            environment=environment,
            tags=_tags_of(feature),
        )
    return True


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
    actor: object,
) -> FeatureStrategy:
    """Add a strategy to the flag in `environment`; records `feature-strategy-add`."""
    with transaction.atomic():
        feature_environment = _locked_feature_environment(feature, environment)
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


def get_feature_strategy(
    *, feature: Feature, environment: str, strategy_id: str, for_update: bool = False
) -> FeatureStrategy:
    """The strategy `strategy_id` of the flag in `environment` (404 otherwise)."""
    strategies = FeatureStrategy.objects.filter(
        feature_environment__feature=feature, feature_environment__environment_id=environment
    ).prefetch_related("segment_links")
    if for_update:
        strategies = strategies.select_for_update(of=("self",))
    try:
        strategy = strategies.filter(pk=uuid.UUID(strategy_id)).first()
    except ValueError:
        strategy = None
    if strategy is None:
        raise NotFoundError(f"Could not find strategy with id {strategy_id}")
    strategy.segment_ids = [link.segment_id for link in strategy.segment_links.all()]
    return strategy


def update_feature_strategy(
    *,
    feature: Feature,
    environment: str,
    strategy_id: str,
    name: str,
    parameters: dict[str, str],
    constraints: list[dict],
    variants: list[dict],
    segments: Sequence[int] = (),
    title: str | None = None,
    disabled: bool = False,
    sort_order: int | None = None,
    actor: object,
) -> FeatureStrategy:
    """Replace the strategy's definition (PUT: omitted optional fields take their defaults,
    except the sort order, which stays); records `feature-strategy-update` with the strategy
    before and after, or nothing when nothing changed."""
    with transaction.atomic():
        strategy = get_feature_strategy(
            feature=feature, environment=environment, strategy_id=strategy_id, for_update=True
        )
        before = strategy_event_data(strategy)
        strategy.name = name
        strategy.parameters = with_default_parameters(name, parameters, feature)
        strategy.constraints = constraints
        strategy.variants = variants
        strategy.title = title
        strategy.disabled = disabled
        if sort_order is not None:
            strategy.sort_order = sort_order
        strategy.save()
        segment_ids = list(dict.fromkeys(segments))
        if segment_ids != strategy.segment_ids:
            _check_segments(segment_ids)
            FeatureStrategySegment.objects.filter(strategy=strategy).delete()
            FeatureStrategySegment.objects.bulk_create(
                [FeatureStrategySegment(strategy=strategy, segment_id=s) for s in segment_ids]
            )
            strategy.segment_ids = segment_ids
        record_event(
            FEATURE_STRATEGY_UPDATE,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            environment=environment,
            data=strategy_event_data(strategy),
            pre_data=before,
            tags=_tags_of(feature),
        )
    return strategy


def delete_feature_strategy(
    *, feature: Feature, environment: str, strategy_id: str, actor: object
) -> None:
    """Remove the strategy; records `feature-strategy-remove` with the strategy as it was.
    When no enabled strategy is left, the flag is turned off in the environment (with its
    `feature-environment-disabled` event), as Unleash does: enabled without a strategy would
    mean on for nobody while looking on."""
    with transaction.atomic():
        feature_environment = _locked_feature_environment(feature, environment)
        strategy = get_feature_strategy(
            feature=feature, environment=environment, strategy_id=strategy_id, for_update=True
        )
        before = strategy_event_data(strategy)
        strategy.delete()
        record_event(
            FEATURE_STRATEGY_REMOVE,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            environment=environment,
            pre_data=before,
            tags=_tags_of(feature),
        )
        if (
            feature_environment.enabled
            and not feature_environment.strategies.filter(disabled=False).exists()
        ):
            set_feature_environment_enabled(
                feature=feature, environment=environment, enabled=False, actor=actor
            )


# --- archiving and reviving several flags ------------------------------------------------------


def _flags_of_project(project: Project, names: Sequence[str]) -> list[Feature]:
    """The named flags that exist; 400 when one of them belongs to another project."""
    found = list(Feature.objects.filter(name__in=set(names)).order_by("name"))
    elsewhere = [f.name for f in found if f.project_id != project.pk]
    if elsewhere:
        raise ValidationError.for_property(
            "/body/features",
            f"These flags are not in project {project.pk}: {', '.join(elsewhere)}.",
        )
    return found


def archive_features(*, project: Project, names: Sequence[str], actor: object) -> None:
    """Archive the named flags of `project` (each as `archive_feature`). Unknown names and
    flags archived already are skipped, as Unleash does; a flag of another project is 400."""
    with transaction.atomic():
        for feature in _flags_of_project(project, names):
            archive_feature(feature=feature, actor=actor)


def revive_features(*, project: Project, names: Sequence[str], actor: object) -> None:
    """Bring the named archived flags of `project` back, disabled in every environment (as
    Unleash revives them), out of lifecycle stage `archived`; one `feature-revived` event each.
    Unknown names and active flags are skipped; a flag of another project is 400."""
    with transaction.atomic():
        for feature in _flags_of_project(project, names):
            revived = Feature.objects.filter(pk=feature.pk, archived_at__isnull=False).update(
                archived_at=None
            )
            if not revived:
                continue
            FeatureEnvironment.objects.filter(feature=feature).update(enabled=False)
            FeatureLifecycleStage.objects.filter(
                feature=feature, stage=LifecycleStage.ARCHIVED
            ).delete()
            record_event(
                FEATURE_REVIVED,
                actor=actor,
                project=feature.project_id,
                feature_name=feature.name,
                tags=_tags_of(feature),
            )


# --- what SDKs report --------------------------------------------------------------------------


def _hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


# What the hourly buckets' bigint counts can hold.
BIGINT_MAX = 2**63 - 1


def _bucket_upsert_sql(projects: int) -> str:
    """One statement that adds a report's counts to the hourly buckets of the active flags it
    names (in `projects` when `projects` > 0), in name order, and returns those names.

    The report travels as one JSON parameter (a list of {name, yes, no}) rather than three
    placeholders per flag: the statement's text then stays the same for every report, and the
    driver parses it once instead of on every call."""
    b, f = FeatureUsageBucket, Feature
    if connection.vendor == "postgresql":
        reported = (
            "SELECT name, yes, no FROM jsonb_to_recordset(%s::jsonb) "
            "AS r(name text, yes bigint, no bigint)"
        )
    else:
        reported = (
            "SELECT json_extract(value, '$.name') AS name, json_extract(value, '$.yes') AS yes, "
            "json_extract(value, '$.no') AS no FROM json_each(%s)"
        )
    in_projects = (
        f" AND f.{column(f, 'project')} IN ({', '.join(['%s'] * projects)})" if projects else ""
    )
    keys = ", ".join(column(b, k) for k in ("feature_name", "environment", "app_name", "hour"))
    yes, no = column(b, "yes"), column(b, "no")
    # Sums saturate at the bigint columns' maximum rather than fail the report.
    least = "LEAST" if connection.vendor == "postgresql" else "MIN"
    return (
        f"WITH reported AS ({reported}) "
        f"INSERT INTO {table(b)} AS bucket ({keys}, {yes}, {no}) "
        "SELECT reported.name, %s, %s, %s, reported.yes, reported.no "
        f"FROM reported JOIN {table(f)} f ON f.{column(f, 'name')} = reported.name "
        f"WHERE f.{column(f, 'archived_at')} IS NULL{in_projects} "
        "ORDER BY reported.name "
        f"ON CONFLICT ({keys}) DO UPDATE SET {yes} = bucket.{yes} + {least}(EXCLUDED.{yes}, "
        f"{BIGINT_MAX} - bucket.{yes}), "
        f"{no} = bucket.{no} + {least}(EXCLUDED.{no}, {BIGINT_MAX} - bucket.{no}) "
        f"RETURNING {column(b, 'feature_name')}"
    )


# (environment, flag) -> when this process last wrote the flag's last_seen_at (monotonic).
_last_seen_written: dict[tuple[str, str], float] = {}


def forget_last_seen_writes() -> None:
    """Forget which last_seen_at this process wrote lately (the next report writes again
    where the database's own condition lets it)."""
    _last_seen_written.clear()


def record_client_metrics(
    *,
    environment: str,
    app_name: str,
    counts: Mapping[str, tuple[int, int]],
    projects: Sequence[str] | None = None,
    now: datetime | None = None,
) -> None:
    """Record what one SDK report says: per flag, how often it was evaluated to on and off.

    This is the one writer of usage (other code that keeps figures about usage hooks in here).
    It is built for hundreds of reports a second without holding up other writes:

    - counts go into hourly buckets by one statement per report, in autocommit, rows in name
      order (concurrent reports lock shared buckets in the same order and never deadlock); the
      same statement keeps only active flags of `projects` (None or `*`: any project), as an
      SDK may report flags that were archived or that its token does not cover;
    - `last_seen_at` of the flag and of its environment, which `lastReportedFlagUsage` and
      `lastSeenAt` show, is written only when it moves by `LAST_SEEN_RESOLUTION` seconds or
      more: each process skips flags it wrote that recently, and the conditional UPDATE skips
      those another process wrote, so most reports write nothing but their counts.
    """
    now = now or timezone.now()
    reported = sorted((name, yes, no) for name, (yes, no) in counts.items() if yes or no)
    if not reported:
        return
    scope = [] if projects is None or "*" in projects else sorted(set(projects))
    hour = FeatureUsageBucket._meta.get_field("hour").get_db_prep_save(_hour_of(now), connection)
    rows = json.dumps([{"name": name, "yes": yes, "no": no} for name, yes, no in reported])
    with connection.cursor() as cursor:
        cursor.execute(_bucket_upsert_sql(len(scope)), [rows, environment, app_name, hour, *scope])
        counted = sorted(row[0] for row in cursor.fetchall())
    resolution = settings.LAST_SEEN_RESOLUTION
    clock = time.monotonic()
    due = [
        name
        for name in counted
        if clock - _last_seen_written.get((environment, name), -resolution - 1) >= resolution
    ]
    if not due:
        return
    stale_before = now - timedelta(seconds=resolution)
    moved = Q(last_seen_at__isnull=True) | Q(last_seen_at__lt=stale_before)
    FeatureEnvironment.objects.filter(moved, feature_id__in=due, environment_id=environment).update(
        last_seen_at=now
    )
    Feature.objects.filter(moved, name__in=due).update(last_seen_at=now)
    if len(_last_seen_written) > 100_000:
        _last_seen_written.clear()
    for name in due:
        _last_seen_written[(environment, name)] = clock


def register_client_instance(
    *,
    environment: str,
    app_name: str,
    instance_id: str,
    sdk_version: str = "",
    strategies: Sequence[str] = (),
    interval: int | None = None,
    started_at: datetime | None = None,
) -> None:
    """Remember an SDK instance (what `POST /api/client/register` says), one row per app,
    instance and environment; registering again updates it."""
    ClientInstance.objects.update_or_create(
        app_name=app_name,
        instance_id=instance_id,
        environment=environment,
        defaults={
            "sdk_version": sdk_version,
            "strategies": list(strategies),
            "interval": interval,
            "started_at": started_at,
            "last_seen_at": timezone.now(),
        },
    )
