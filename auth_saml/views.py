"""POST/GET /api/admin/auth/saml/settings."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auth_saml.models import SamlSettings
from auth_saml.serializers import (
    SP_KEY_WRITE_ONLY,
    SamlSettingsResponseSerializer,
    SamlSettingsSerializer,
)
from auth_saml.services import store_saml_settings
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

_STORED = OpenApiResponse(
    response=SamlSettingsResponseSerializer,
    description="The stored settings, as sent (fields that were not sent are left out), "
    "except `spCertificate`. " + SP_KEY_WRITE_ONLY,
)


# Built once (see features/views.py): instantiating a serializer deep-copies its fields, which
# cost more than validating; validating keeps no state between requests.
SETTINGS_BODY = SamlSettingsSerializer()


class SamlSettingsView(AdminApiMixin, APIView):
    """The SAML 2.0 settings that drive sign-in at `/auth/saml/login` (service provider
    metadata at `/auth/saml/metadata`, assertion consumer at `/auth/saml/callback`)."""

    required_permission = perms.ADMIN

    @extend_schema(
        operation_id="getSamlSettings",
        tags=["Auth"],
        summary="Get the SAML auth settings",
        description='The stored SAML 2.0 settings; `{"enabled": false}` before any were '
        "stored. Needs the `ADMIN` permission.",
        responses={200: _STORED, **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return Response(serialize(SamlSettings.load(), SamlSettingsResponseSerializer))

    @extend_schema(
        operation_id="setSamlSettings",
        tags=["Auth"],
        summary="Update SAML auth settings",
        description=(
            "Updates the settings for SAML 2.0 authentication. The body is one of two variants "
            "chosen by `enabled`; it is stored as sent and replaces the previous settings "
            "(a field that is not sent is cleared, including `spCertificate`). "
            + SP_KEY_WRITE_ONLY
            + " Writes the audit event `setting-created` (the "
            "first time) or `setting-updated`, whose data carries no certificate or key, only "
            "their SHA-256 fingerprints. Needs the `ADMIN` permission."
        ),
        request=SamlSettingsSerializer,
        responses={200: _STORED, **error_responses(400, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        values = SETTINGS_BODY.run_validation(request.data)
        stored = store_saml_settings(values=values, actor=request.user)
        return Response(serialize(stored, SamlSettingsResponseSerializer))
