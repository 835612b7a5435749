"""Cloning a flag (Unleash's `cloneFeature`)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.clone_services import clone_feature
from features.schema import SpecNamedAutoSchema
from features.serializers import FeatureSchemaSerializer
from features.validators import MAX_FLAG_NAME_LENGTH
from features.views import (
    FEATURE_NAME,
    PROJECT_ID,
    feature_location,
    get_active_feature_or_404,
    get_feature_detail_or_404,
)
from flagadmin.api.fields import StrictBooleanField, StrictSerializer, UrlFriendlyNameField
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms


@extend_schema_serializer(component_name="cloneFeatureSchema")
class CloneFeatureSchemaSerializer(StrictSerializer):
    name = UrlFriendlyNameField(
        max_length=MAX_FLAG_NAME_LENGTH,
        help_text="The new flag's name: unused by every flag, archived ones included.",
    )
    replaceGroupId = StrictBooleanField(
        source="replace_group_id",
        default=True,
        help_text="Whether strategies' `groupId` parameters become the new name (default).",
    )


class FeatureCloneViewSet(AdminApiMixin, viewsets.ViewSet):
    """Copy a feature flag."""

    schema = SpecNamedAutoSchema()
    required_permission = perms.CREATE_FEATURE
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="cloneFeature",
        tags=["Features"],
        summary="Clone a feature flag",
        description=(
            "Creates flag `name` in the project as a copy of the flag, as Unleash does: its "
            "type, description, impression data and stale state, its dependencies, each "
            "environment's variants and strategies (title, paused state, sort order, parameters, "
            "constraints, variants, segments; a `groupId` parameter becomes the new name "
            "unless `replaceGroupId` is false). The copy is off in every environment and has "
            "no tags, as in Unleash. Records `feature-created`, then "
            "`feature-dependency-added` and `feature-strategy-add` for what is copied. 409 "
            "`NameExistsError` for a taken name; 404 when the project has no such active flag. "
            "Needs `CREATE_FEATURE` in the project. Answers 201 with the whole new flag and "
            "its `Location`, as `createFeature` does."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=CloneFeatureSchemaSerializer,
        responses={
            201: OpenApiResponse(FeatureSchemaSerializer, description="The new flag."),
            **error_responses(400, 404, 409, 413, 415),
        },
    )
    def clone(self, request: Request, projectId: str, featureName: str) -> Response:
        body = CloneFeatureSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        source = get_active_feature_or_404(projectId, featureName)
        # Answered from the write's transaction (see `FeatureEnvironmentViewSet._toggle`).
        with transaction.atomic():
            created = clone_feature(source=source, **body.validated_data, actor=request.user)
            detail = get_feature_detail_or_404(request, projectId, created.name)
            answer = serialize(detail, FeatureSchemaSerializer)
        return Response(
            answer,
            status=status.HTTP_201_CREATED,
            headers={"Location": feature_location(projectId, created.name)},
        )
