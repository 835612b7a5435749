"""Writing flags. Each function is one transaction that also writes its audit event."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.fields import DateTimeField

from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureTag,
    FeatureType,
    LifecycleStage,
    Tag,
)
from flagadmin.api.errors import NameExistsError
from flagadmin.api.principals import acting_user_id
from flagadmin.audit import record_event
from projects.models import Project, ProjectEnvironment

User = get_user_model()

FEATURE_CREATED = "feature-created"
FEATURE_ARCHIVED = "feature-archived"
FEATURE_METADATA_UPDATED = "feature-metadata-updated"

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


def _ensure_tags(tags: Sequence[tuple[str, str]]) -> list[Tag]:
    """The Tag rows for (type, value) pairs, creating the values that are new. Concurrent
    creators of the same new value both succeed: the unique constraint makes one insert a
    no-op (ON CONFLICT DO NOTHING), and both then read the one row."""
    match = Q()
    for tag_type, value in tags:
        match |= Q(type_id=tag_type, value=value)
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
    project_environments = list(
        ProjectEnvironment.objects.filter(project=project)
        .select_related("environment")
        .order_by("environment__sort_order", "environment__name")
    )
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
    try:
        # The flag is the first row written: when its name is taken, the primary key refuses
        # the insert, and the atomic block (a savepoint when nested) rolls back to a usable
        # connection. Racing creations are serialised by the key (PostgreSQL) or by the
        # IMMEDIATE write lock (SQLite); the loser gets the same 409 as a plain clash.
        with transaction.atomic():
            feature.save(force_insert=True)
            environments = FeatureEnvironment.objects.bulk_create(
                [
                    FeatureEnvironment(
                        feature=feature, environment=link.environment, enabled=False, variants=[]
                    )
                    for link in project_environments
                ]
            )
            stage = FeatureLifecycleStage.objects.create(
                feature=feature, stage=LifecycleStage.INITIAL, entered_at=now
            )
            if tags:
                FeatureTag.objects.bulk_create(
                    [
                        FeatureTag(feature=feature, tag=tag, created_by_user_id=creator_id)
                        for tag in _ensure_tags(tags)
                    ]
                )
            tag_list = [{"type": tag_type, "value": value} for tag_type, value in tags]
            record_event(
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
    except IntegrityError:
        error = _name_taken_error(name)
        if error is None:
            raise
        raise error from None

    creator = actor if isinstance(actor, User) else User.objects.filter(pk=creator_id).first()
    feature.created_by = creator
    for env in environments:
        env.strategy_list = []
    feature.environment_list = environments
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
