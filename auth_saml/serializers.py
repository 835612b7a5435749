"""The wire shapes of the SAML settings: `samlSettingsSchema` in,
`samlSettingsResponseSchema` out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from auth_saml.models import SP_KEY_REDACTED, DefaultRootRole, SamlSettings
from flagadmin.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictNumberField,
    StrictSerializer,
)
from flagadmin.api.responses import ResponseShape
from flagadmin.core.models import ROOT_ROLE_TYPES, Role

SP_KEY_WRITE_ONLY = (
    "Write-only: stored encrypted and never returned; responses carry "
    f'"{SP_KEY_REDACTED}" in its place when a key is stored (and leave it out when none is), and '
    f'sending "{SP_KEY_REDACTED}" back keeps the stored key.'
)

# Variant A (`enabled: true`) needs these three; variant B (`enabled: false`) needs none.
REQUIRED_WHEN_ENABLED = ("entityId", "signOnUrl", "certificate")

HELP = {
    "enabled": "Whether SAML 2.0 sign-in is enabled for this instance. Chooses the variant.",
    "entityId": "The identity provider's entity id (its Issuer).",
    "signOnUrl": "The identity provider's single sign-on URL, where users are sent to sign in.",
    "certificate": "The identity provider's X.509 signing certificate (base64, with or without "
    "PEM armour): responses must be signed with its key.",
    "signOutUrl": "The identity provider's single sign-out URL.",
    "spCertificate": "The service provider's signing key (PEM), used to sign sign-out requests. "
    + SP_KEY_WRITE_ONLY,
    "autoCreate": "Create users on first sign-in when their email's domain is in `emailDomains`.",
    "emailDomains": "Comma-separated email domains for which users are auto-created, e.g. "
    '"example.com, @example.org" (trimmed, case-insensitive, a leading @ ignored).',
    "defaultRootRole": "Root role of auto-created users.",
    "defaultRootRoleId": "Id of the root role of auto-created users; takes precedence over "
    "`defaultRootRole` (Admin = 1, Editor = 2, Viewer = 3). Without either: Editor.",
    "enableGroupSyncing": "Sync group memberships from the identity provider's groups on "
    "each sign-in.",
    "groupJsonPath": "Name of the assertion attribute that lists the user's groups (matched "
    "exactly first, then as a dotted path into JSON values). Groups whose `mappingsSSO` "
    "contain one of them are joined; memberships added by sign-in that no longer match are "
    "removed, memberships added by hand are never removed. When the attribute is absent from "
    "an assertion, memberships are left unchanged.",
}


class SamlSettingsSerializer(StrictSerializer):
    """`samlSettingsSchema`: one of two variants chosen by `enabled` (documented as a `oneOf`
    by the OpenAPI extension in `auth_saml/schema.py`)."""

    enabled = StrictBooleanField(help_text=HELP["enabled"])
    entityId = StrictCharField(source="entity_id", required=False, allow_blank=True)
    signOnUrl = StrictCharField(source="sign_on_url", required=False, allow_blank=True)
    certificate = StrictCharField(required=False, allow_blank=True)
    signOutUrl = StrictCharField(source="sign_out_url", required=False, allow_blank=True)
    spCertificate = StrictCharField(source="sp_private_key", required=False, allow_blank=True)
    autoCreate = StrictBooleanField(source="auto_create", required=False)
    emailDomains = StrictCharField(source="email_domains", required=False, allow_blank=True)
    defaultRootRole = StrictChoiceField(
        DefaultRootRole.values, source="default_root_role", required=False
    )
    defaultRootRoleId = StrictNumberField(source="default_root_role_id", required=False)
    enableGroupSyncing = StrictBooleanField(source="enable_group_syncing", required=False)
    groupJsonPath = StrictCharField(source="group_json_path", required=False, allow_blank=True)

    def validate_defaultRootRoleId(self, value: float) -> int:
        root_ids = list(
            Role.objects.filter(type__in=ROOT_ROLE_TYPES)
            .order_by("id")
            .values_list("id", flat=True)
        )
        if value != int(value) or int(value) not in root_ids:
            allowed = ", ".join(str(i) for i in root_ids)
            raise serializers.ValidationError(f"must be the id of a root role ({allowed})")
        return int(value)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """Field errors and the variant's required fields, all reported together (one
        `details` entry per failing property, in field order)."""
        errors: dict[str, Any] = {}
        value: dict[str, Any] = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, Mapping):
                raise
            errors = dict(exc.detail)
        if isinstance(data, Mapping) and data.get("enabled") is True:
            for name in REQUIRED_WHEN_ENABLED:
                if name in errors:
                    continue
                if name not in data:
                    errors[name] = [
                        ErrorDetail(self.fields[name].error_messages["required"], code="required")
                    ]
                elif isinstance(data[name], str) and not data[name].strip():
                    errors[name] = [
                        ErrorDetail(
                            "must contain at least one character that is not whitespace "
                            "when `enabled` is true",
                            code="blank",
                        )
                    ]
        if errors:
            order = list(self.fields)
            ordered = dict(sorted(errors.items(), key=lambda kv: _position(order, kv[0])))
            raise serializers.ValidationError(ordered)
        return value


def _position(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


class RedactedCharField(serializers.CharField):
    """A stored secret shown only as the marker (its stored, encrypted value is never read)."""

    def to_representation(self, value: Any) -> str:
        return SP_KEY_REDACTED


@extend_schema_serializer(component_name="samlSettingsResponseSchema")
class SamlSettingsResponseSerializer(ResponseShape):
    """The stored settings, as sent (fields that were not sent are left out)."""

    # None marked required, as in the specification (`enabled` is in fact always present).
    enabled = serializers.BooleanField(required=False, help_text=HELP["enabled"])
    entityId = serializers.CharField(source="entity_id", required=False, help_text=HELP["entityId"])
    signOnUrl = serializers.CharField(
        source="sign_on_url", required=False, help_text=HELP["signOnUrl"]
    )
    certificate = serializers.CharField(required=False, help_text=HELP["certificate"])
    signOutUrl = serializers.CharField(
        source="sign_out_url", required=False, help_text=HELP["signOutUrl"]
    )
    autoCreate = serializers.BooleanField(
        source="auto_create", required=False, help_text=HELP["autoCreate"]
    )
    emailDomains = serializers.CharField(
        source="email_domains", required=False, help_text=HELP["emailDomains"]
    )
    defaultRootRole = serializers.ChoiceField(
        DefaultRootRole.values,
        source="default_root_role",
        required=False,
        help_text=HELP["defaultRootRole"],
    )
    defaultRootRoleId = serializers.IntegerField(
        source="default_root_role_id", required=False, help_text=HELP["defaultRootRoleId"]
    )
    enableGroupSyncing = serializers.BooleanField(
        source="enable_group_syncing", required=False, help_text=HELP["enableGroupSyncing"]
    )
    groupJsonPath = serializers.CharField(
        source="group_json_path", required=False, help_text=HELP["groupJsonPath"]
    )
    spCertificate = RedactedCharField(
        source="sp_certificate_encrypted", required=False, help_text=HELP["spCertificate"]
    )

    def to_representation(self, instance: SamlSettings) -> dict[str, Any]:
        if instance._state.adding:
            return {"enabled": False}  # nothing was ever stored
        data = super().to_representation(instance)
        return {key: value for key, value in data.items() if value is not None}
