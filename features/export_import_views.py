"""Unleash's import and export of flags: `POST /api/admin/features-batch/export`, `/validate`
and `/import` (docs/export-import.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.export_import_serializers import (
    ExportQuerySchemaSerializer,
    ExportResultSchemaSerializer,
    ImportTogglesSchemaSerializer,
    ImportTogglesValidateSchemaSerializer,
)
from features.export_import_services import (
    ADMIN_TOKEN_REFUSED,
    MissingImportPermissions,
    export_features,
    import_features,
    validate_import,
)
from features.schema import SpecNamedAutoSchema
from flagadmin.api.errors import NoAccessError, ValidationError
from flagadmin.api.principals import TokenPrincipal
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

TAGS = ["Import/Export"]


class FeaturesBatchViewSet(AdminApiMixin, viewsets.ViewSet):
    """Move flags between Unleash servers (and this one) in Unleash's export format."""

    schema = SpecNamedAutoSchema()
    # As Unleash: any admin-API caller; what an import needs is checked against its content.
    required_permission = perms.NONE

    def _has_permission(self, request: Request, project_id: str):
        return lambda name: request.user.has_permission(name, project_id=project_id)

    @extend_schema(
        operation_id="exportFeatures",
        tags=TAGS,
        summary="Export feature flags from an environment",
        description=(
            "The flags named in `features` (an empty list: every flag), those carrying the "
            "tag value `tag`, or every active flag of `project`, with their strategies "
            "(segments by id), state and variants in `environment`, tags and tag types, the "
            "context fields their strategies and variants name, the segments they use, and "
            "their dependencies, as Unleash exports them. Records `features-exported` with the "
            "export. 404 `NotFoundError` for an environment that does not exist (Unleash "
            "answers an empty export)."
        ),
        request=ExportQuerySchemaSerializer,
        responses={
            200: OpenApiResponse(ExportResultSchemaSerializer, description="The export."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def export(self, request: Request) -> Response:
        body = ExportQuerySchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        query = body.validated_data
        result = export_features(
            environment=query["environment"],
            features=query.get("features"),
            tag=query.get("tag"),
            project=query.get("project"),
            actor=request.user,
        )
        return Response(result)

    @extend_schema(
        operation_id="validateImport",
        tags=TAGS,
        summary="Validate feature import data",
        description=(
            "What importing `data` into the project's `environment` would refuse (`errors`: "
            "strategy types or segments that do not exist here, context fields whose legal "
            "values differ, flags of other projects, duplicates, missing parents), what it "
            "would overwrite or skip (`warnings`: custom strategy types used, archived flags, "
            "flags of the project), and the permissions the caller lacks for it "
            "(`permissions`), in Unleash's words. Writes nothing. 404 for a project or an "
            "environment that does not exist or that the project does not use (Unleash "
            "validates those without a word)."
        ),
        request=ImportTogglesSchemaSerializer,
        responses={
            200: OpenApiResponse(
                ImportTogglesValidateSchemaSerializer, description="The validation."
            ),
            **error_responses(400, 404, 413, 415),
        },
    )
    def validate(self, request: Request) -> Response:
        body = ImportTogglesSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        dto = body.validated_data
        answer = validate_import(
            project_id=dto["project"],
            environment=dto["environment"],
            data=dto["data"],
            has_permission=self._has_permission(request, dto["project"]),
        )
        return Response(answer)

    @extend_schema(
        operation_id="importToggles",
        tags=TAGS,
        summary="Import feature flags",
        description=(
            "Writes `data` into the project's `environment`, all or nothing: flags created or "
            "updated (their description, type, stale state, impression data), the "
            "environment's variants, new tag types, the flags' tags as listed, new context "
            "fields, the flags' strategies there replaced by the imported ones (segments "
            "matched by name), each flag turned on or off there, the dependencies added; each "
            "write with its own audit event, then `features-imported`. Archived flags are "
            "skipped. 400 `ValidationError` for what `validate` lists as errors, in Unleash's "
            "words; 403 `NoAccessError` naming a permission the caller lacks. As Unleash, an "
            "admin API token may not import (400): use a personal access token, so that the "
            "changes have a person's name. Answers 200 with no body."
        ),
        request=ImportTogglesSchemaSerializer,
        responses={
            200: OpenApiResponse(description="Imported."),
            **error_responses(400, 404, 409, 413, 415),
        },
    )
    def import_(self, request: Request) -> Response:
        principal = request.user
        if isinstance(principal, TokenPrincipal) and principal.token.type == "admin":
            raise ValidationError.stated(ADMIN_TOKEN_REFUSED)
        body = ImportTogglesSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        dto = body.validated_data
        try:
            import_features(
                project_id=dto["project"],
                environment=dto["environment"],
                data=dto["data"],
                has_permission=self._has_permission(request, dto["project"]),
                actor=principal,
            )
        except MissingImportPermissions as missing:
            raise NoAccessError(
                None,
                message="You don't have the required permissions to perform this operation. "
                f"You are missing: {', '.join(missing.missing)}.",
            ) from None
        return Response(status=status.HTTP_200_OK, content_type=None)
