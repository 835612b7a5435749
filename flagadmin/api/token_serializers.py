"""Request bodies of the API token operations added after the list and create ones: a new
expiry, and a project's client or frontend token."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from flagadmin.api.fields import (
    PrintableCharField,
    StrictCharField,
    StrictDateTimeField,
    StrictSerializer,
)
from flagadmin.api.serializers import ApiTokenTypeField
from flagadmin.core.models import TokenType
from flagadmin.core.services import environment_exists


@extend_schema_serializer(component_name="updateApiTokenSchema")
class UpdateApiTokenSchemaSerializer(StrictSerializer):
    expiresAt = StrictDateTimeField(
        help_text="When the token stops working. A time already past ends it from the next "
        "request, as Unleash allows."
    )


@extend_schema_serializer(component_name="createProjectApiTokenSchema")
class CreateProjectApiTokenSchemaSerializer(StrictSerializer):
    """A client token (for SDKs) or a frontend token (for browser and mobile apps on
    `/api/frontend`) that reaches this one project."""

    tokenName = PrintableCharField(max_length=255, help_text="A name to recognise the token by.")
    type = ApiTokenTypeField(
        choices=[TokenType.CLIENT.value, TokenType.FRONTEND.value],
        help_text="`client` (or its newer name `backend`) or `frontend`, in any case.",
    )
    environment = StrictCharField(
        max_length=255,
        required=False,
        help_text="An existing environment (default `development`).",
    )
    expiresAt = StrictDateTimeField(
        future=True,
        required=False,
        allow_null=True,
        help_text="When the token stops working; absent or null: never.",
    )

    def validate_environment(self, value: str) -> str:
        if not environment_exists(value):
            raise serializers.ValidationError("must be the name of an existing environment")
        return value

    def validate(self, attrs: dict) -> dict:
        if "environment" not in attrs:
            if not environment_exists("development"):
                raise serializers.ValidationError(
                    {"environment": ["must be the name of an existing environment"]}
                )
            attrs = {**attrs, "environment": "development"}
        return attrs
