"""Tags and tag types, written as Unleash 8.2's tag, tag-type and feature-tag services write
them: each write and its audit event in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from features.models import Feature, Tag, TagType
from features.services import tag_feature, untag_feature
from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.errors import InvalidInputError, NameExistsError, NotFoundError, Problem

TAG_CREATED = "tag-created"
TAG_DELETED = "tag-deleted"
TAG_TYPE_CREATED = "tag-type-created"
TAG_TYPE_UPDATED = "tag-type-updated"
TAG_TYPE_DELETED = "tag-type-deleted"

TagPair = tuple[str, str]


def tag_type_as_dict(tag_type: TagType) -> dict[str, Any]:
    """`tagTypeSchema`, as Unleash's store reads a row (every column, nulls included)."""
    return {
        "name": tag_type.name,
        "description": tag_type.description,
        "icon": tag_type.icon,
        "color": tag_type.color,
    }


def _unknown_type(tag_type: str) -> InvalidInputError:
    problem = f"Tag type '{tag_type}' does not exist"
    return InvalidInputError(
        Problem(problem),
        message="Request validation failed: your request body or params contain invalid data: "
        + problem,
    )


def record_tag_created(tag: Tag, *, actor: Actor) -> None:
    """`tag-created`, for a tag created alone or while tagging a flag with it."""
    record_event(TAG_CREATED, actor=actor, data={"type": tag.type_id, "value": tag.value})


def _tag_if_needed(tag_type: str, value: str, *, actor: Actor) -> Tag:
    """The tag `type:value`, created (`tag-created`) when new; 400 for a type that does not
    exist. Called inside the caller's transaction."""
    tag = Tag.objects.filter(type_id=tag_type, value=value).first()
    if tag is not None:
        return tag
    if not TagType.objects.filter(pk=tag_type).exists():
        raise _unknown_type(tag_type)
    try:
        with transaction.atomic():  # a savepoint: a racing creation of the same value wins
            tag = Tag.objects.create(type_id=tag_type, value=value)
    except IntegrityError:
        return Tag.objects.get(type_id=tag_type, value=value)
    record_tag_created(tag, actor=actor)
    return tag


# --- a flag's tags ------------------------------------------------------------------------------


def add_feature_tag(*, feature: Feature, tag_type: str, value: str, actor: Actor) -> None:
    """Tag the flag, creating the tag when new (Unleash's `addTag`); tagging it again with a
    tag it has changes nothing."""
    with transaction.atomic():
        tag_feature(feature=feature, tag=_tag_if_needed(tag_type, value, actor=actor), actor=actor)


def update_feature_tags(
    *, feature: Feature, added: Sequence[TagPair], removed: Sequence[TagPair], actor: Actor
) -> None:
    """Add `added`, then remove `removed` (Unleash's `updateTags`), all or nothing."""
    with transaction.atomic():
        for tag_type, value in dict.fromkeys(added):
            add_feature_tag(feature=feature, tag_type=tag_type, value=value, actor=actor)
        for tag_type, value in dict.fromkeys(removed):
            remove_feature_tag(feature=feature, tag_type=tag_type, value=value, actor=actor)


def remove_feature_tag(*, feature: Feature, tag_type: str, value: str, actor: Actor) -> None:
    """Untag the flag (`feature-untagged`); a tag it does not have changes nothing."""
    tag = Tag.objects.filter(type_id=tag_type, value=value).first()
    if tag is not None:
        untag_feature(feature=feature, tag=tag, actor=actor)


def feature_tags(feature: Feature) -> QuerySet[Tag]:
    """The flag's tags in the order they were added, each read with its type (for its colour)."""
    return (
        Tag.objects.filter(feature_tags__feature=feature)
        .select_related("type")
        .order_by("feature_tags__id")
    )


# --- tags ---------------------------------------------------------------------------------------


def create_tag(*, tag_type: str, value: str, actor: Actor) -> Tag:
    """Create `type:value` (`tag-created`), its value trimmed as Unleash trims it. 409 when it
    exists, 400 when its type does not."""
    value = value.strip()
    message = f"A tag of {tag_type}:{value} already exists"
    with transaction.atomic():
        if Tag.objects.filter(type_id=tag_type, value=value).exists():
            raise NameExistsError(message)
        if not TagType.objects.filter(pk=tag_type).exists():
            raise _unknown_type(tag_type)
        try:
            with transaction.atomic():
                tag = Tag.objects.create(type_id=tag_type, value=value)
        except IntegrityError:
            raise NameExistsError(message) from None
        record_tag_created(tag, actor=actor)
    return tag


def delete_tag(*, tag_type: str, value: str, actor: Actor) -> None:
    """Delete the tag and every flag's use of it (`tag-deleted`); an unknown one changes
    nothing."""
    with transaction.atomic():
        deleted, _ = Tag.objects.filter(type_id=tag_type, value=value).delete()
        if deleted:
            record_event(TAG_DELETED, actor=actor, data={"type": tag_type, "value": value})


# --- tag types ----------------------------------------------------------------------------------


def create_tag_type(*, fields: dict[str, Any], actor: Actor) -> TagType:
    """Create a tag type (`tag-type-created`, with the fields as sent); 409 for a name taken."""
    name = fields["name"]
    message = f"There already exists a tag-type with the name {name}"
    with transaction.atomic():
        if TagType.objects.filter(pk=name).exists():
            raise NameExistsError(message)
        try:
            with transaction.atomic():
                tag_type = TagType.objects.create(
                    name=name,
                    description=fields.get("description") or "",
                    icon=fields.get("icon"),
                    color=fields.get("color"),
                )
        except IntegrityError:
            raise NameExistsError(message) from None
        record_event(TAG_TYPE_CREATED, actor=actor, data=fields)
    return tag_type


def check_tag_type_name_free(name: str) -> None:
    if TagType.objects.filter(pk=name).exists():
        raise NameExistsError(f"There already exists a tag-type with the name {name}")


def update_tag_type(*, name: str, fields: dict[str, Any], actor: Actor) -> None:
    """Change the given fields of a tag type (`tag-type-updated`); 404 for an unknown one."""
    with transaction.atomic():
        tag_type = TagType.objects.select_for_update().filter(pk=name).first()
        if tag_type is None:
            raise NotFoundError("Could not find tag-type")
        for field, value in fields.items():
            setattr(tag_type, field, "" if field == "description" and value is None else value)
        tag_type.save(update_fields=list(fields) or None)
        record_event(TAG_TYPE_UPDATED, actor=actor, data={"name": name, **fields})


def delete_tag_type(*, name: str, actor: Actor) -> None:
    """Delete a tag type with its tags and their uses on flags (`tag-type-deleted`)."""
    with transaction.atomic():
        tag_type = TagType.objects.select_for_update().filter(pk=name).first()
        if tag_type is None:
            raise NotFoundError("Could not find tag-type")
        pre_data = tag_type_as_dict(tag_type)
        tag_type.delete()
        record_event(TAG_TYPE_DELETED, actor=actor, pre_data=pre_data)
