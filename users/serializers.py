"""Serializers of user administration (`createUserSchema`, `usersSchema`)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from flagadmin.api.fields import (
    INT64_MAX,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
    json_integer,
)
from flagadmin.api.responses import ResponseShape
from flagadmin.api.serializers import UserSchemaSerializer
from flagadmin.core.models import ROOT_ROLE_TYPES, Role

ROOT_ROLE_MESSAGE = (
    "must be the id or the name of a root role (1 or Admin, 2 or Editor, 3 or Viewer, "
    "or a custom root role)"
)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1, "example": 2},
            {"type": "string", "example": "Editor"},
        ]
    }
)
class RootRoleRefField(serializers.Field):
    """A root role given by id (`2`) or by name (`"Editor"`), resolved to the `Role`."""

    default_error_messages = {"invalid": ROOT_ROLE_MESSAGE, "null": ROOT_ROLE_MESSAGE}

    def to_internal_value(self, data: Any) -> Role:
        roles = Role.objects.filter(type__in=ROOT_ROLE_TYPES)
        role = None
        role_id = json_integer(data)
        if role_id is not None:
            if 0 < role_id <= INT64_MAX:
                role = roles.filter(pk=role_id).first()
        elif isinstance(data, str) and data:
            role = roles.filter(name=data).first()
        if role is None:
            self.fail("invalid")
        return role

    def to_representation(self, value: Role) -> int:
        return value.pk


class SecretCharField(StrictCharField):
    """A string never quoted back: its messages are whole sentences, so the error handler does
    not append "You sent …"."""

    default_error_messages = {
        "invalid": "The password must be a string.",
        "null": "The password must be a string.",
        "blank": "The password must not be empty.",
        "max_length": "The password must not have more than {max_length} characters.",
    }


@extend_schema_serializer(component_name="createUserSchema")
class UserCreateSerializer(StrictSerializer):
    """A person to create. At least one of `email` and `username` is required; the email is
    what SAML sign-in matches (case-insensitively)."""

    email = StrictCharField(
        required=False,
        allow_null=True,
        max_length=255,
        help_text="Email address; required when `username` is not given. Unique whatever its case.",
    )
    username = StrictCharField(
        required=False,
        allow_null=True,
        max_length=255,
        help_text="Username; required when `email` is not given. Unique whatever its case.",
    )
    name = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=255, help_text="Full name."
    )
    rootRole = RootRoleRefField(
        help_text="The user's root role, by id or by name: 1/`Admin`, 2/`Editor`, "
        "3/`Viewer`, or a custom root role."
    )
    password = SecretCharField(
        required=False,
        write_only=True,
        max_length=128,
        help_text="Password for the Django admin sign-in; none means the user cannot sign "
        "in with a password (SAML only). Checked against the password rules.",
    )
    sendEmail = StrictBooleanField(
        required=False,
        help_text="Accepted for compatibility with Unleash; no email is sent "
        "(`emailSent` stays false).",
    )

    def validate_email(self, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            EmailValidator()(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError('must match format "email"') from exc
        return value

    def validate_password(self, value: str) -> str:
        try:
            password_validation.validate_password(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(
                "The password is not accepted: " + " ".join(exc.messages)
            ) from exc
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("email") and not attrs.get("username"):
            raise serializers.ValidationError(
                "The body must contain `email` or `username` (or both): a user needs one "
                "of them to be found and to sign in."
            )
        return attrs


@extend_schema_serializer(component_name="roleSchema")
class RoleSchemaSerializer(ResponseShape, serializers.ModelSerializer):
    class Meta:
        model = Role
        fields = ["id", "name", "description", "type"]
        read_only_fields = fields


@extend_schema_serializer(component_name="usersSchema", many=False)
class UsersSchemaSerializer(serializers.Serializer):
    users = UserSchemaSerializer(many=True)
    rootRoles = RoleSchemaSerializer(many=True, help_text="The root roles users can be given.")
