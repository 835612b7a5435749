"""Bodies of the tag endpoints, named as Unleash's OpenAPI document names them (`tagSchema`,
`createTagSchema`, `updateTagsSchema`, `tagsSchema`, `tagWithVersionSchema`, `tagTypeSchema`,
`updateTagTypeSchema`, `tagTypesSchema`, `validateTagTypeSchema`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.fields import SkipField, get_attribute

from features.models import Tag
from features.serializers import TagSchemaSerializer
from flagadmin.api.errors import ValidationError
from flagadmin.api.fields import (
    ClosedSerializer,
    StrictCharField,
    StrictListField,
    StrictSerializer,
)
from flagadmin.api.responses import Attrs, ResponseShape
from flagadmin.core.names import is_url_friendly

TAG_MIN_LENGTH = 2
TAG_MAX_LENGTH = 50
COLOR_PATTERN = r"^#[0-9A-Fa-f]{6}$"
# createTagSchema's value: 2 to 50 characters once the white space around it is trimmed.
TAG_VALUE_PATTERN = r"^\s*\S.{0,48}\S\s*$"


def _pattern(pattern: str) -> RegexValidator:
    # JavaScript's `$` is the end of the text; Python's also matches before a final newline.
    anchored = re.compile(pattern.removesuffix("$") + r"\Z")
    return RegexValidator(anchored, message=f'must match pattern "{pattern}"')


class TagTypeNameField(StrictCharField):
    """A tag type's name, as a tag's `type`: 2 to 50 URL-friendly characters."""

    default_error_messages = {"not_url_friendly": "must be URL friendly"}

    def __init__(self, **kwargs):
        kwargs.setdefault("min_length", TAG_MIN_LENGTH)
        kwargs.setdefault("max_length", TAG_MAX_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value in (".", "..") or not is_url_friendly(value):
            self.fail("not_url_friendly")
        return value


def refuse_additional_properties(data: object, allowed: set[str], prefix: str = "/body") -> None:
    """400 for a property the object's schema does not declare (`additionalProperties: false`),
    as Unleash's request validator words it."""
    if not isinstance(data, dict):
        return
    extra = sorted(set(data) - allowed)
    if extra:
        path = f"{prefix}/{extra[0]}"
        raise ValidationError.for_property(
            path,
            f"The `{prefix}` object of the request body does not allow additional properties. "
            f"Your request included the `{path}` property.",
        )


# `tagSchema` (features.serializers) declares type and value; Unleash's also has a colour,
# which requests may carry and the server ignores.
TAG_PROPERTIES = {"type", "value", "color"}


@extend_schema_serializer(component_name="createTagSchema")
class CreateTagSchemaSerializer(ClosedSerializer):
    """Data used to create a new tag."""

    value = StrictCharField(
        validators=[_pattern(TAG_VALUE_PATTERN)],
        help_text="The value of the tag: 2 to 50 characters; white space around it is trimmed.",
    )
    type = TagTypeNameField(help_text="The type of the tag (an existing tag type).")
    color = StrictCharField(
        required=False,
        allow_null=True,
        validators=[_pattern(COLOR_PATTERN)],
        help_text="The hexadecimal colour of the tag's type (ignored).",
    )


@extend_schema_serializer(component_name="updateTagsSchema")
class UpdateTagsSchemaSerializer(ClosedSerializer):
    """Changes to a flag's tags: the tags to add, then the tags to remove."""

    addedTags = StrictListField(child=TagSchemaSerializer(), help_text="Tags to add to the flag.")
    removedTags = StrictListField(
        child=TagSchemaSerializer(), help_text="Tags to remove from the flag."
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            for key in ("addedTags", "removedTags"):
                if isinstance(data.get(key), list):
                    for index, tag in enumerate(data[key]):
                        refuse_additional_properties(tag, TAG_PROPERTIES, f"/body/{key}/{index}")
        return super().to_internal_value(data)


class _KeyIfGiven(serializers.CharField):
    """A key written only when the item has the value, even when that value is null (DRF writes
    null for a nullable field the item lacks)."""

    def get_attribute(self, instance: Any) -> Any:
        try:
            return get_attribute(instance, self.source_attrs)
        except (KeyError, AttributeError):
            raise SkipField() from None


class TagResponseSerializer(ResponseShape):
    # A tag, its type first as Unleash writes it; with `with_colour=True` (a flag's tags, read
    # with their types) also its type's colour. No docstring: it would become the item's
    # description in the OpenAPI document.

    type = serializers.CharField(source="type_id", help_text="The type of the tag.")
    value = serializers.CharField(help_text="The value of the tag.")
    color = _KeyIfGiven(
        required=False, allow_null=True, help_text="The hexadecimal colour of the tag's type."
    )

    class Meta:
        ref_name = None

    def get_attrs(self, items: Sequence[Tag]) -> Mapping[Tag, Attrs]:
        if not self.context.get("with_colour"):
            return {}
        return {tag: {"color": tag.type.color} for tag in items}


@extend_schema_serializer(component_name="tagsSchema", many=False)
class TagsSchemaSerializer(serializers.Serializer):
    """A list of tags with a version number."""

    version = serializers.IntegerField(help_text="The version of the schema (1).")
    tags = TagResponseSerializer(many=True, help_text="The tags.")


@extend_schema_serializer(component_name="tagWithVersionSchema")
class TagWithVersionSchemaSerializer(serializers.Serializer):
    """A tag with a version number."""

    version = serializers.IntegerField(help_text="The version of the schema (1).")
    tag = TagResponseSerializer(help_text="The tag.")


@extend_schema_serializer(component_name="tagTypeSchema")
class TagTypeSchemaSerializer(ClosedSerializer):
    """A tag type."""

    name = TagTypeNameField(help_text="The name of the tag type: 2 to 50 URL-friendly characters.")
    description = StrictCharField(
        required=False, allow_blank=True, help_text="The description of the tag type."
    )
    icon = StrictCharField(
        required=False, allow_null=True, allow_blank=True, help_text="The icon of the tag type."
    )
    color = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        validators=[_pattern(COLOR_PATTERN)],
        help_text="The hexadecimal colour of the tag type (`#RRGGBB`).",
    )


@extend_schema_serializer(component_name="updateTagTypeSchema")
class UpdateTagTypeSchemaSerializer(StrictSerializer):
    """The fields of a tag type to change; those left out are kept."""

    description = StrictCharField(
        required=False, allow_blank=True, help_text="The description of the tag type."
    )
    icon = StrictCharField(
        required=False, allow_null=True, allow_blank=True, help_text="The icon of the tag type."
    )
    color = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        validators=[_pattern(COLOR_PATTERN)],
        help_text="The hexadecimal colour of the tag type (`#RRGGBB`).",
    )


class TagTypeResponseSerializer(ResponseShape):
    name = serializers.CharField(help_text="The name of the tag type.")
    description = serializers.CharField(help_text="The description of the tag type.")
    icon = serializers.CharField(allow_null=True, help_text="The icon of the tag type.")
    color = serializers.CharField(allow_null=True, help_text="The hexadecimal colour.")

    class Meta:
        ref_name = None


@extend_schema_serializer(component_name="tagTypesSchema", many=False)
class TagTypesSchemaSerializer(serializers.Serializer):
    """A list of tag types with a version number."""

    version = serializers.IntegerField(help_text="The version of the schema (1).")
    tagTypes = TagTypeResponseSerializer(many=True, help_text="The tag types.")


@extend_schema_serializer(component_name="tagTypeWithVersionSchema")
class TagTypeWithVersionSchemaSerializer(serializers.Serializer):
    """A tag type with a version number (Unleash's document calls it `tagTypeSchema`)."""

    version = serializers.IntegerField(help_text="The version of the schema (1).")
    tagType = TagTypeResponseSerializer(help_text="The tag type.")


@extend_schema_serializer(component_name="validateTagTypeSchema")
class ValidateTagTypeSchemaSerializer(serializers.Serializer):
    """The result of validating a tag type."""

    valid = serializers.BooleanField(help_text="Always true (an invalid one is a 400 or 409).")
    tagType = TagTypeResponseSerializer(help_text="The tag type as sent.")
