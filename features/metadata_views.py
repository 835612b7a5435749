"""Changing a flag's description, type, stale state and impression data (`updateFeature`,
`patchFeature`, `staleFeatures`), checking a name (`validateFeature`), reading one environment
of a flag (`getFeatureEnvironment`), and reviving or deleting one archived flag."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.json_patch import PatchRefused, apply_json_patch
from features.metadata_serializers import (
    BatchStaleSchemaSerializer,
    FeatureMetadataSchemaSerializer,
    PatchSchemaSerializer,
    UpdateFeatureSchemaSerializer,
    ValidateFeatureSchemaSerializer,
)
from features.metadata_services import (
    delete_archived_flag,
    metadata_document,
    metadata_from_document,
    revive_flag,
    set_flags_stale,
    update_flag_metadata,
)
from features.models import Feature, FeatureEnvironment, FeatureStrategy
from features.schema import SpecNamedAutoSchema
from features.serializers import FeatureStrategySchemaSerializer
from features.services import _name_taken_error
from features.views import (
    ENVIRONMENT,
    FEATURE_NAME,
    PROJECT_ID,
    ProjectFeatureViewSet,
    get_project_feature_or_404,
)
from flagadmin.api.errors import NotFoundError, OperationDeniedError, ValidationError
from flagadmin.api.responses import ResponseShape, serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

FLAG = OpenApiParameter("featureName", str, OpenApiParameter.PATH, description="Flag name.")
NO_BODY = OpenApiResponse(description="This response has no body.")


def _metadata_answer(feature: Feature) -> dict:
    return serialize(feature, FeatureMetadataSchemaSerializer)


class ProjectFeatureMetadataViewSet(ProjectFeatureViewSet):
    """Create, read, change and archive the feature flags of a project."""

    required_permissions = {
        **ProjectFeatureViewSet.required_permissions,
        "update": perms.UPDATE_FEATURE,
        "partial_update": perms.UPDATE_FEATURE,
    }

    @extend_schema(
        operation_id="updateFeature",
        tags=["Features"],
        summary="Update a feature flag",
        description=(
            "Changes the flag's `description`, `type`, `stale` and `impressionData`; fields left "
            "out stay as they are, as Unleash documents it (Unleash 8.2 itself resets them to "
            "their defaults). A `name` other than the flag's is 400; `project`, `archived` and "
            "other fields are ignored. Records `feature-metadata-updated` and, when the stale "
            "state changes, `feature-stale-on` or `feature-stale-off`. An archived flag is 400 "
            "`ArchivedFeatureError`. Needs `UPDATE_FEATURE` in the project. Answers with the "
            "flag's row, as Unleash does."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=UpdateFeatureSchemaSerializer,
        responses={
            200: FeatureMetadataSchemaSerializer,
            **error_responses(400, 404, 413, 415),
        },
    )
    def update(self, request: Request, projectId: str, featureName: str) -> Response:
        body = UpdateFeatureSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        if changes.pop("name", featureName) != featureName:
            raise ValidationError.for_property("/body/name", "Cannot change name of feature flag")
        feature = get_project_feature_or_404(projectId, featureName)
        if "description" in changes:
            changes["description"] = changes["description"] or None
        updated = update_flag_metadata(feature=feature, changes=changes, actor=request.user)
        return Response(_metadata_answer(updated))

    @extend_schema(
        operation_id="patchFeature",
        tags=["Features"],
        summary="Modify a feature flag",
        description=(
            "Applies a JSON Patch (RFC 6902) to the flag's row (`name`, `description`, `type`, "
            "`project`, `stale`, `createdAt`, `impressionData`, `archived`), as Unleash does: "
            "the changes to `description`, `type`, `stale` and `impressionData` are stored "
            "(a removed one takes its default), the others are ignored. A path naming "
            "`variants` is 403 `OperationDeniedError`; a patch that cannot be applied (a failed "
            "`test`, a missing member) or that leaves an invalid value is 400 (Unleash 8.2 "
            "answers 500 for the first and stores the second). Records what `updateFeature` "
            "records. Needs `UPDATE_FEATURE` in the project. Answers with the flag's row."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=PatchSchemaSerializer(many=True),
        responses={
            200: FeatureMetadataSchemaSerializer,
            **error_responses(400, 404, 413, 415),
        },
    )
    def partial_update(self, request: Request, projectId: str, featureName: str) -> Response:
        body = PatchSchemaSerializer(data=request.data, many=True)
        body.is_valid(raise_exception=True)
        operations = body.validated_data
        if any("/variants" in op["path"] for op in operations):
            raise OperationDeniedError(
                "Changing variants is done via PATCH operation to "
                "/api/admin/projects/:project/features/:feature/variants"
            )
        feature = get_project_feature_or_404(projectId, featureName)
        with transaction.atomic():
            # The flag's row is a flat document: any deeper path is refused as missing.
            patched = apply_json_patch(metadata_document(feature), operations)
            if not isinstance(patched, dict):
                raise PatchRefused.at(
                    [], "Could not apply provided patch: the flag must stay an object."
                )
            values = UpdateFeatureSchemaSerializer(data=metadata_from_document(patched))
            values.is_valid(raise_exception=True)
            changes = dict(values.validated_data)
            changes["description"] = changes.get("description") or None
            updated = update_flag_metadata(feature=feature, changes=changes, actor=request.user)
        return Response(_metadata_answer(updated))


class ProjectStaleViewSet(AdminApiMixin, viewsets.ViewSet):
    """Mark several flags of a project stale or not."""

    schema = SpecNamedAutoSchema()
    required_permission = perms.UPDATE_FEATURE
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="staleFeatures",
        tags=["Features"],
        summary="Mark features as stale / not stale",
        description=(
            "Marks the named flags of the project stale (`stale: true`) or not, and records "
            "`feature-stale-on` or `feature-stale-off` for each flag whose state changed. "
            "Names of no flag are ignored; a flag of another project is 403 "
            "`InvalidOperationError` and nothing changes. Needs `UPDATE_FEATURE` in the "
            "project. 202, no body."
        ),
        parameters=[PROJECT_ID],
        request=BatchStaleSchemaSerializer,
        responses={202: NO_BODY, **error_responses(400, 413, 415)},
    )
    def stale(self, request: Request, projectId: str) -> Response:
        body = BatchStaleSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        set_flags_stale(
            project_id=projectId,
            names=body.validated_data["features"],
            stale=body.validated_data["stale"],
            actor=request.user,
        )
        return Response(status=status.HTTP_202_ACCEPTED)


class FeatureNameViewSet(AdminApiMixin, viewsets.ViewSet):
    """Whether a flag name may be used."""

    schema = SpecNamedAutoSchema()
    required_permission = perms.NONE

    @extend_schema(
        operation_id="validateFeature",
        tags=["Features"],
        summary="Validate a feature flag name.",
        description=(
            "200 when the name is URL-friendly and no flag, in any project, archived or not, "
            "has it; 409 `NameExistsError` when one has; 400 for a name that is not "
            "URL-friendly. Any admin-API principal may ask."
        ),
        request=ValidateFeatureSchemaSerializer,
        responses={200: NO_BODY, **error_responses(400, 409, 413, 415)},
    )
    def validate(self, request: Request) -> Response:
        body = ValidateFeatureSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        error = _name_taken_error(body.validated_data["name"])
        if error is not None:
            raise error
        return Response(status=status.HTTP_200_OK)


class FeatureEnvironmentInfoSchemaSerializer(ResponseShape):
    name = serializers.CharField(source="feature_id")
    environment = serializers.CharField(source="environment_id")
    enabled = serializers.BooleanField()
    strategies = FeatureStrategySchemaSerializer(many=True, source="strategy_list")


class FeatureEnvironmentInfoViewSet(AdminApiMixin, viewsets.ViewSet):
    """One environment of a flag."""

    schema = SpecNamedAutoSchema()
    required_permission = perms.NONE
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="getFeatureEnvironment",
        tags=["Features"],
        summary="Get a feature environment",
        description=(
            "Whether the flag is enabled in the environment, and its strategies there in "
            "evaluation order. 404 when the project has no such flag or the flag has no entry "
            "for the environment. Any admin-API principal may read."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        responses={200: FeatureEnvironmentInfoSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, projectId: str, featureName: str, environment: str):
        feature = get_project_feature_or_404(projectId, featureName)
        strategies = Prefetch(
            "strategies",
            queryset=FeatureStrategy.objects.select_related("feature_environment")
            .prefetch_related("segment_links")
            .order_by("sort_order", "created_at"),
            to_attr="strategy_list",
        )
        entry = (
            FeatureEnvironment.objects.filter(feature=feature, environment_id=environment)
            .prefetch_related(strategies)
            .first()
        )
        if entry is None:
            raise NotFoundError(f"Could not find {featureName} in {environment}")
        return Response(serialize(entry, FeatureEnvironmentInfoSchemaSerializer))


class ArchivedFeatureViewSet(AdminApiMixin, viewsets.ViewSet):
    """Revive or delete one archived flag."""

    schema = SpecNamedAutoSchema()
    required_permissions = {"revive": perms.UPDATE_FEATURE, "destroy": perms.DELETE_FEATURE}
    project_url_kwarg = "flagProject"
    reads_no_body = True

    def check_permissions(self, request: Request) -> None:
        # The permission is scoped to the flag's project, as Unleash scopes it (the URL names
        # only the flag). A copy: the handler's own keywords stay those of the URL.
        project = Feature.objects.filter(name=self.kwargs["featureName"]).values_list(
            "project_id", flat=True
        )
        self.kwargs = {**self.kwargs, "flagProject": project.first()}
        super().check_permissions(request)

    @extend_schema(
        operation_id="reviveFeature",
        tags=["Archive"],
        summary="Revives a feature",
        description=(
            "Brings the archived flag back, disabled in every environment, and records "
            "`feature-revived`. A flag that is not archived is left as it is (Unleash 8.2 "
            "turns it off everywhere and records a revival). 404 when no flag has the name. "
            "Needs `UPDATE_FEATURE`. No body is read. 200, no body."
        ),
        parameters=[FLAG],
        request=None,
        responses={200: NO_BODY, **error_responses(404)},
    )
    def revive(self, request: Request, featureName: str) -> Response:
        revive_flag(name=featureName, actor=request.user)
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="deleteFeature",
        tags=["Archive"],
        summary="Deletes an archived feature",
        description=(
            "Deletes the archived flag for good and records `feature-deleted`. An active flag, "
            "or a name of no flag, is left unchanged (200, as Unleash). A flag another flag "
            "depends on is 403 `InvalidOperationError`. Needs `DELETE_FEATURE`. 200, no body."
        ),
        parameters=[FLAG],
        request=None,
        responses={200: NO_BODY, **error_responses()},
    )
    def destroy(self, request: Request, featureName: str) -> Response:
        delete_archived_flag(name=featureName, actor=request.user)
        return Response(status=status.HTTP_200_OK)
