"""OpenAPI for the SAML settings: `samlSettingsSchema` as the specification's `oneOf` of two
variants chosen by `enabled`, which a DRF serializer cannot express by itself."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension

from auth_saml.models import DefaultRootRole
from auth_saml.serializers import HELP, REQUIRED_WHEN_ENABLED

REQUEST_COMPONENT = "samlSettingsSchema"


def _properties(enabled: bool) -> dict[str, Any]:
    required_text = {"minLength": 1} if enabled else {}
    return {
        # Wrapped in allOf so that drf-spectacular's enum hook leaves it inline: it would merge
        # the two one-value enums of the variants into one component named after the property.
        "enabled": {
            "allOf": [{"type": "boolean", "enum": [enabled]}],
            "description": HELP["enabled"],
        },
        "entityId": {"type": "string", **required_text, "description": HELP["entityId"]},
        "signOnUrl": {"type": "string", **required_text, "description": HELP["signOnUrl"]},
        "certificate": {"type": "string", **required_text, "description": HELP["certificate"]},
        "signOutUrl": {"type": "string", "description": HELP["signOutUrl"]},
        "spCertificate": {
            "type": "string",
            "description": HELP["spCertificate"],
        },
        "autoCreate": {"type": "boolean", "description": HELP["autoCreate"]},
        "emailDomains": {"type": "string", "description": HELP["emailDomains"]},
        "defaultRootRole": {
            "type": "string",
            "enum": list(DefaultRootRole.values),
            "description": HELP["defaultRootRole"],
        },
        "defaultRootRoleId": {"type": "number", "description": HELP["defaultRootRoleId"]},
        "enableGroupSyncing": {"type": "boolean", "description": HELP["enableGroupSyncing"]},
        "groupJsonPath": {"type": "string", "description": HELP["groupJsonPath"]},
    }


SAML_SETTINGS_REQUEST_SCHEMA: dict[str, Any] = {
    "description": (
        "The SAML 2.0 settings of the instance: one of two variants chosen by `enabled` "
        "(required). With `enabled: true`, `entityId`, `signOnUrl` and `certificate` are "
        "required non-empty strings; with `enabled: false` every other field is optional. "
        "The settings are stored as sent and replace the previous ones entirely (a field "
        "that is not sent is cleared). Unknown fields are ignored."
    ),
    "type": "object",
    "properties": {"enabled": {"type": "boolean", "description": HELP["enabled"]}},
    "required": ["enabled"],
    "oneOf": [
        {
            "type": "object",
            "title": "SAML enabled",
            "properties": _properties(True),
            "required": ["enabled", *REQUIRED_WHEN_ENABLED],
        },
        {
            "type": "object",
            "title": "SAML disabled",
            "properties": _properties(False),
            "required": ["enabled"],
        },
    ],
}


class SamlSettingsSerializerExtension(OpenApiSerializerExtension):
    target_class = "auth_saml.serializers.SamlSettingsSerializer"

    def get_name(self, auto_schema, direction) -> str:
        return REQUEST_COMPONENT

    def map_serializer(self, auto_schema, direction) -> dict[str, Any]:
        return SAML_SETTINGS_REQUEST_SCHEMA
