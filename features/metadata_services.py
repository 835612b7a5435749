"""Changing what describes flags (description, type, stale, impression data), one flag or a
project's batch, and reviving or deleting one archived flag. Each function is one transaction
that writes its audit events."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction

from features.locks import lock_flag_for_edit, lock_named_flags
from features.models import Feature, FeatureType
from features.services import (
    delete_features,
    record_stale_change,
    revive_features,
    update_feature_metadata,
)
from flagadmin.core.actors import Actor
from flagadmin.core.errors import ArchivedError, InvalidOperationError, NotFoundError

# The fields of a flag that `updateFeature` and `patchFeature` change; the document's other
# fields (name, project, createdAt, archived) are read only.
METADATA_FIELDS = ("description", "type", "stale", "impression_data")


def update_flag_metadata(*, feature: Feature, changes: Mapping[str, Any], actor: Actor) -> Feature:
    """Change the flag's `changes` (keys of `METADATA_FIELDS`; others stay as stored). Records
    `feature-metadata-updated` with the values before and after and, when the stale state
    changed, `feature-stale-on` or `feature-stale-off` (both `update_feature_metadata`'s). An
    archived flag is refused (`ArchivedError`): it changes through the archive."""
    with transaction.atomic():
        # Every row a type or stale change writes (the counts of any type), in lock order.
        lock_flag_for_edit(feature)
        current = Feature.objects.get(pk=feature.pk)
        if current.archived_at is not None:
            raise ArchivedError()
        values = {field: getattr(current, field) for field in METADATA_FIELDS}
        values.update({k: v for k, v in changes.items() if k in METADATA_FIELDS})
        updated = update_feature_metadata(feature=current, **values, actor=actor)
    return updated


def update_flag_page_metadata(
    *,
    feature: Feature,
    parents: Iterable[str],
    description: str | None,
    type: str,
    stale: bool,
    impression_data: bool,
    actor: Actor,
) -> Feature:
    """For the Django admin's flag page, which saves the metadata, then the environments, tags
    and dependencies of its inlines (through their services) in one transaction: every row
    those writes may change is locked first, in the order every other writer takes
    (`lock_flag_for_edit`, with the `parents` the page names), then the metadata is written as
    `update_feature_metadata` writes it. Call inside the page's transaction."""
    lock_flag_for_edit(feature, parents=parents)
    return update_feature_metadata(
        feature=feature,
        description=description,
        type=type,
        stale=stale,
        impression_data=impression_data,
        actor=actor,
    )


def set_flags_stale(*, project_id: str, names: Sequence[str], stale: bool, actor: Actor) -> None:
    """Mark the named flags of the project stale or not, one `feature-stale-on` or
    `feature-stale-off` event per flag that changed. Names of no flag are ignored; a flag of
    another project is 403 `InvalidOperationError` and changes nothing, as Unleash answers."""
    with transaction.atomic():
        found = lock_named_flags(project_id, names)
        elsewhere = sorted({f.project_id for f in found.values() if f.project_id != project_id})
        if elsewhere:
            projects = ", ".join(f'"{p}"' for p in elsewhere)
            raise InvalidOperationError(
                "The operation could not be completed. The features exist, but the provided "
                f"project ids ({projects}) does not match the project provided in request URL "
                f'("{project_id}").'
            )
        changed = [f for f in found.values() if f.stale != stale]
        Feature.objects.filter(pk__in=[f.pk for f in changed]).update(stale=stale)
        for feature in changed:
            feature.stale = stale
            record_stale_change(feature, actor=actor)


def revive_flag(*, name: str, actor: Actor) -> None:
    """Bring the archived flag back, as `revive_features` does (disabled everywhere,
    `feature-revived`). A flag that is not archived is left as it is. 404 for no such flag."""
    feature = Feature.objects.filter(name=name).select_related("project").first()
    if feature is None:
        raise NotFoundError("No feature flag found")
    revive_features(project=feature.project, names=[name], actor=actor)


def delete_archived_flag(*, name: str, actor: Actor) -> None:
    """Delete the archived flag for good, as `delete_features` does (`feature-deleted`; 403
    when another flag depends on it). No such flag, or an active one: nothing changes."""
    feature = Feature.objects.filter(name=name).select_related("project").first()
    if feature is not None:
        delete_features(project=feature.project, names=[name], actor=actor)


# --- JSON Patch on a flag's metadata ---------------------------------------------------------


def metadata_document(feature: Feature) -> dict[str, Any]:
    """The document `patchFeature` patches: the flag's row as Unleash's store reads it."""
    return {
        "name": feature.name,
        "description": feature.description,
        "type": feature.type,
        "project": feature.project_id,
        "stale": feature.stale,
        "createdAt": feature.created_at,
        "impressionData": feature.impression_data,
        "archived": feature.archived_at is not None,
    }


def metadata_from_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata a patched document sets: a member it removed takes Unleash's default
    (no description, type `release`, not stale, no impression data)."""
    return {
        "description": document.get("description"),
        "type": document.get("type", FeatureType.RELEASE),
        "stale": document.get("stale", False),
        "impressionData": document.get("impressionData", False),
    }
