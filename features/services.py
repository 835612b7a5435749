"""Writing flags. Each function is one transaction that also writes its audit event."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import nullcontext

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from features.locks import lock_flag_rows
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
from features.sql import insert_together, load_new_flag_target
from features.variants import fix_variant_weights
from flagadmin.core.actors import Actor, acting_user_id
from flagadmin.core.audit import build_event, record_event
from flagadmin.core.db import atomic_retrying_conflicts
from flagadmin.core.errors import (
    InvalidInputError,
    InvalidOperationError,
    NameExistsError,
    NotFoundError,
)
from flagadmin.core.times import api_timestamp
from projects.models import Project

User = get_user_model()

FEATURE_CREATED = "feature-created"
FEATURE_ARCHIVED = "feature-archived"
FEATURE_METADATA_UPDATED = "feature-metadata-updated"
FEATURE_STALE_ON = "feature-stale-on"
FEATURE_STALE_OFF = "feature-stale-off"
FEATURE_ENVIRONMENT_ENABLED = "feature-environment-enabled"
FEATURE_ENVIRONMENT_DISABLED = "feature-environment-disabled"
FEATURE_ENVIRONMENT_VARIANTS_UPDATED = "feature-environment-variants-updated"
FEATURE_TAGGED = "feature-tagged"
FEATURE_UNTAGGED = "feature-untagged"
FEATURE_DELETED = "feature-deleted"
FEATURE_REVIVED = "feature-revived"


def _name_taken_error(name: str) -> NameExistsError | None:
    archived_at = Feature.objects.filter(name=name).values_list("archived_at", flat=True)[:1]
    if not archived_at:
        return None
    if archived_at[0] is not None:
        return NameExistsError("An archived flag with that name already exists")
    return NameExistsError("A flag with that name already exists")


def tags_of(feature: Feature) -> list[dict[str, str]]:
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
    project_id: str,
    name: str,
    type: str = FeatureType.RELEASE,
    description: str | None = None,
    impression_data: bool = False,
    stale: bool = False,
    tags: Sequence[tuple[str, str]] = (),
    actor: Actor,
) -> Feature:
    """Create flag `name` in project `project_id` with one disabled environment entry per
    environment enabled in the project, lifecycle stage `initial`, its tags (tag types must
    exist; new values are created), the acting user as creator, and one `feature-created`
    audit event. `stale` is for a clone (Unleash's clone creates the copy stale when its source
    is, recorded in `feature-created` alone, with no `feature-stale-on`).

    Raises NotFoundError when the project does not exist or is archived, NameExistsError when
    any flag, in any project, archived or not, has that name, also when a concurrent creation
    of the same name wins the race.

    Returns the flag with what `FeatureSchemaSerializer` reads (as `load_feature_detail` does),
    from what was written, so that answering costs no further query.
    """
    now = timezone.now()
    creator_id = acting_user_id(actor)
    # A signed-in user is the creator as loaded; a token names its system user (read here).
    target = load_new_flag_target(
        project_id, creator_id=None if isinstance(actor, User) else creator_id
    )
    if target is None:
        raise NotFoundError(f"Active project with id {project_id} does not exist")
    creator = actor if isinstance(actor, User) else target.creator
    tags = list(dict.fromkeys(tags))
    feature = Feature(
        name=name,
        project=target.project,
        type=type,
        description=description or None,
        impression_data=impression_data,
        stale=stale,
        created_at=now,
        created_by_id=creator_id,
    )
    stage = FeatureLifecycleStage(feature=feature, stage=LifecycleStage.INITIAL, entered_at=now)
    feature_environments = [
        FeatureEnvironment(feature=feature, environment=environment, enabled=False, variants=[])
        for environment in target.environments
    ]
    tag_list = [{"type": tag_type, "value": value} for tag_type, value in tags]
    event = _created_event(feature, tag_list=tag_list, actor=actor)
    try:
        # One transaction writes the flag, its lifecycle stage, environments, tags and event.
        # The flag's row goes first: when its name is taken, the primary key refuses it before
        # anything else is written, and the whole write rolls back. Racing creations are
        # serialised by that key (PostgreSQL) or by the IMMEDIATE write lock (SQLite); the loser
        # gets the same 409 as a plain clash. (Not `flagadmin.core.db.unique_or_conflict`: its
        # savepoint would cost this busiest write two more round trips, while the one query
        # is all or nothing by itself.)
        # A transaction of its own when tags are created first, and a savepoint inside a
        # caller's transaction (the name check below must still be able to read).
        with transaction.atomic() if tags or connection.in_atomic_block else nullcontext():
            # New tag values are created first, in the same transaction as the flag.
            feature_tags = [
                FeatureTag(feature=feature, tag=tag, created_by_user_id=creator_id)
                for tag in (_ensure_tags(tags) if tags else ())
            ]
            insert_together([[feature], [stage], feature_environments, feature_tags, [event]])
    except IntegrityError:
        error = _name_taken_error(name)
        if error is None:
            raise
        raise error from None

    return _as_read(
        feature, creator=creator, stage=stage, environments=feature_environments, tags=tag_list
    )


def _created_event(feature: Feature, *, tag_list: list[dict[str, str]], actor: Actor):
    """The `feature-created` event of a new flag, unsaved (written with the flag's rows)."""
    return build_event(
        FEATURE_CREATED,
        actor=actor,
        project=feature.project_id,
        feature_name=feature.name,
        tags=tag_list,
        data={
            "name": feature.name,
            "description": feature.description,
            "type": feature.type,
            "project": feature.project_id,
            "stale": feature.stale,
            "createdAt": api_timestamp(feature.created_at),
            "lastSeenAt": None,
            "impressionData": feature.impression_data,
            "archived": False,
        },
    )


def _as_read(
    feature: Feature,
    *,
    creator: User | None,
    stage: FeatureLifecycleStage,
    environments: list[FeatureEnvironment],
    tags: list[dict[str, str]],
) -> Feature:
    """The new flag with what `load_feature_detail` attaches, from what was written."""
    feature.created_by = creator
    for env in environments:
        env.strategy_list = []
    feature.environment_list = environments
    feature.tag_list = tags
    feature.current_stage = stage
    feature.dependency_list = []
    feature.child_names = []
    feature.is_favorite = False
    feature.collaborator_list = [creator] if creator is not None else []
    return feature


def refuse_orphaning(names: Collection[str], *, leaving: Collection[str] = ()) -> None:
    """Refuse, with Unleash's 403 `InvalidOperationError`, to archive or delete the flags
    `names` while a flag that does not leave with them (`leaving`: archived in the same
    operation) depends on one: it would lose, without a word, the parent it is gated on."""
    dependents = FeatureDependency.objects.filter(parent_id__in=names)
    if dependents.exclude(child_id__in=leaving).exists():
        raise InvalidOperationError(
            "You can not archive/delete those features since other features depend on them."
            if len(set(names)) > 1
            else "You can not archive/delete this feature since other features depend on it."
        )


def archive_feature(*, feature: Feature, actor: Actor, dependents_checked: bool = False) -> None:
    """Archive the flag: its name stays taken, it leaves the project's active flags, it enters
    lifecycle stage `archived`, and its own dependencies on parents go. Archiving an archived
    flag changes nothing and records nothing. A flag other flags depend on is refused
    (`refuse_orphaning`), unless the caller checked that they leave with it."""
    now = timezone.now()
    with transaction.atomic():
        # In the order of `features.locks`: the flag, its dependencies, then (the UPDATE's
        # triggers) its counts and day counts, then (the event) the activity row.
        active = (
            Feature.objects.filter(pk=feature.pk, archived_at__isnull=True)
            .select_for_update(no_key=True)
            .exists()
        )
        if not active:
            return
        if not dependents_checked:
            refuse_orphaning([feature.name])
        FeatureDependency.objects.filter(child=feature).delete()
        Feature.objects.filter(pk=feature.pk).update(archived_at=now)
        feature.archived_at = now
        FeatureLifecycleStage.objects.bulk_create(
            [FeatureLifecycleStage(feature=feature, stage=LifecycleStage.ARCHIVED, entered_at=now)],
            ignore_conflicts=True,
        )
        record_event(
            FEATURE_ARCHIVED,
            actor=actor,
            project=feature.project_id,
            feature_name=feature.name,
            tags=tags_of(feature),
        )


def update_feature_metadata(
    *,
    feature: Feature,
    description: str | None,
    type: str,
    stale: bool,
    impression_data: bool,
    actor: Actor,
) -> Feature:
    """Change what describes the flag; records `feature-metadata-updated` with the values
    before and after, or nothing when nothing changed, and, when the stale state changed,
    `feature-stale-on` or `feature-stale-off` (as Unleash names that change), whoever calls."""
    with transaction.atomic():
        # NO KEY: see `features.locks`.
        current = Feature.objects.select_for_update(no_key=True).get(pk=feature.pk)
        before = _metadata(current)
        was_stale = current.stale
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
            tags=tags_of(current),
        )
        if current.stale != was_stale:
            record_stale_change(current, actor=actor)
    return current


def record_stale_change(feature: Feature, *, actor: Actor) -> None:
    """Record the flag's new stale state, `feature-stale-on` or `feature-stale-off`."""
    record_event(
        FEATURE_STALE_ON if feature.stale else FEATURE_STALE_OFF,
        actor=actor,
        project=feature.project_id,
        feature_name=feature.name,
        tags=tags_of(feature),
    )


def set_feature_environment_variants(
    *, feature: Feature, environment: str, variants: list, actor: Actor
) -> None:
    """Replace the flag's variants in one environment, their weights fixed and sorted as Unleash
    stores them (`fix_variant_weights`); records `feature-environment-variants-updated` with
    the variants before and after."""
    variants = fix_variant_weights(variants)
    with transaction.atomic():
        state = FeatureEnvironment.objects.select_for_update(no_key=True).get(
            feature=feature, environment_id=environment
        )
        store_environment_variants(state, feature, variants, actor=actor)


def store_environment_variants(
    state: FeatureEnvironment, feature: Feature, variants: list, *, actor: Actor
) -> None:
    """Store `variants` (fixed already) as the flag's in the environment of `state` (its entry,
    locked by the caller) with their `feature-environment-variants-updated` event, the
    variants before and after: the one writer of that event."""
    before = state.variants
    FeatureEnvironment.objects.filter(pk=state.pk).update(variants=variants)
    state.variants = variants
    record_event(
        FEATURE_ENVIRONMENT_VARIANTS_UPDATED,
        actor=actor,
        project=feature.project_id,
        feature_name=feature.name,
        environment=state.environment_id,
        data={"variants": variants},
        pre_data={"variants": before},
        tags=tags_of(feature),
    )


def tag_feature(*, feature: Feature, tag: Tag, actor: Actor) -> None:
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
                tags=tags_of(feature),
            )


def untag_feature(*, feature: Feature, tag: Tag, actor: Actor) -> None:
    """Remove a tag from the flag (`feature-untagged`)."""
    with transaction.atomic():
        tags_before = tags_of(feature)
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


def delete_archived_feature(*, feature: Feature, actor: Actor) -> None:
    """Delete an archived flag for good (`feature-deleted`), as Unleash allows only for
    archived flags. Raises ValueError for a flag that is not archived."""
    with transaction.atomic():
        current = Feature.objects.select_for_update(no_key=True).get(pk=feature.pk)
        if current.archived_at is None:
            raise ValueError("Only archived flags can be deleted.")
        # What the delete takes (its entries, its dependencies either way, the activity row
        # the delete trigger advances), in the order of `features.locks`.
        lock_flag_rows(current.project_id, [current])
        refuse_orphaning([current.name])
        _delete_locked(current, actor)


def _delete_locked(feature: Feature, actor: Actor) -> None:
    """Delete `feature` (archived, locked with its rows) and record `feature-deleted`."""
    tags = tags_of(feature)
    pre_data = {**_metadata(feature), "archived": True}
    feature.delete()  # (clears the primary key, the name: the event reads pre_data's)
    record_event(
        FEATURE_DELETED,
        actor=actor,
        project=pre_data["project"],
        feature_name=pre_data["name"],
        pre_data=pre_data,
        tags=tags,
    )


# --- archiving and reviving several flags ------------------------------------------------------


def _locked_flags_of_project(project: Project, names: Sequence[str]) -> list[Feature]:
    """The named flags that exist, by name, locked with the rows their writes change (see
    `features.locks`); 400 when one of them belongs to another project."""
    found = list(
        Feature.objects.filter(name__in=set(names)).order_by("name").select_for_update(no_key=True)
    )
    elsewhere = [f.name for f in found if f.project_id != project.pk]
    if elsewhere:
        raise InvalidInputError.at(
            ["features"], f"These flags are not in project {project.pk}: {', '.join(elsewhere)}."
        )
    lock_flag_rows(project.pk, found)
    return found


def archive_features(*, project: Project, names: Sequence[str], actor: Actor) -> None:
    """Archive the named flags of `project` (each as `archive_feature`). Unknown names and
    flags archived already are skipped, as Unleash does; a flag of another project is 400."""

    def archive() -> None:
        found = _locked_flags_of_project(project, names)
        refuse_orphaning(names, leaving=[feature.name for feature in found])
        for feature in found:
            archive_feature(feature=feature, actor=actor, dependents_checked=True)

    atomic_retrying_conflicts(archive)


def delete_features(*, project: Project, names: Sequence[str], actor: Actor) -> None:
    """Delete the named archived flags of `project` for good, one `feature-deleted` event each
    (as `delete_archived_feature`). Unknown names and active flags are skipped, as Unleash
    does; a flag of another project is 400; a flag others depend on is refused
    (`refuse_orphaning`: its dependents are active flags, which stay)."""

    def delete() -> None:
        found = _locked_flags_of_project(project, names)
        refuse_orphaning(names)
        for feature in found:
            if feature.archived_at is not None:
                _delete_locked(feature, actor)

    atomic_retrying_conflicts(delete)


def revive_features(*, project: Project, names: Sequence[str], actor: Actor) -> None:
    """Bring the named archived flags of `project` back, disabled in every environment (as
    Unleash revives them), out of lifecycle stage `archived`; one `feature-revived` event each.
    Unknown names and active flags are skipped; a flag of another project is 400."""

    def revive() -> None:
        for feature in _locked_flags_of_project(project, names):
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
                tags=tags_of(feature),
            )

    atomic_retrying_conflicts(revive)
