"""The feature flag endpoints of a project."""

from __future__ import annotations

from urllib.parse import quote

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.schema import SpecNamedAutoSchema
from features.selectors import get_active_project, get_project_feature, load_feature_detail
from features.serializers import CreateFeatureSchemaSerializer, FeatureSchemaSerializer
from features.services import archive_feature, create_feature
from flagadmin import permissions as perms
from flagadmin.api.views import AdminApiMixin
from flagadmin.names import URL_SAFE_CHARACTERS
from flagadmin.schema import error_responses

PROJECT_ID = OpenApiParameter("projectId", str, OpenApiParameter.PATH, description="Project id.")
FEATURE_NAME = OpenApiParameter("featureName", str, OpenApiParameter.PATH, description="Flag name.")


# Built once: a DRF serializer copies its declared fields on every instantiation, which costs
# more than the work itself. `run_validation` and `to_representation` keep no state between
# calls, so one instance of each serves every request.
CREATE_FEATURE_SCHEMA = CreateFeatureSchemaSerializer()
FEATURE_SCHEMA = FeatureSchemaSerializer()


def feature_location(project_id: str, name: str) -> str:
    """The flag's path. Names and ids are URL-friendly, so quoting changes nothing for them;
    it is there so that the header can never carry a character a URL does not allow."""
    return (
        f"/api/admin/projects/{quote(project_id, safe=URL_SAFE_CHARACTERS)}"
        f"/features/{quote(name, safe=URL_SAFE_CHARACTERS)}"
    )


class ProjectFeatureViewSet(AdminApiMixin, viewsets.ViewSet):
    """Create, read and archive the feature flags of a project."""

    schema = SpecNamedAutoSchema()
    required_permissions = {"create": perms.CREATE_FEATURE, "destroy": perms.DELETE_FEATURE}
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="createFeature",
        tags=["Features"],
        summary="Add a new feature flag",
        description=(
            "Creates a flag in the project, disabled, with one entry per environment enabled "
            "in the project, lifecycle stage `initial` and the given tags, and records a "
            "`feature-created` event. Needs `CREATE_FEATURE` in the project. The flag name must "
            "be unused by every flag of every project, archived ones included (409 "
            "`NameExistsError`). An unknown or archived project is 404. Fields other than "
            "those of `createFeatureSchema` are ignored. Answers 201 with the whole flag and "
            "`Location: /api/admin/projects/<projectId>/features/<name>`."
        ),
        parameters=[PROJECT_ID],
        request=CreateFeatureSchemaSerializer,
        responses={
            201: OpenApiResponse(FeatureSchemaSerializer, description="The created flag."),
            **error_responses(400, 404, 409, 413, 415, 503),
        },
    )
    def create(self, request: Request, projectId: str) -> Response:
        body = CREATE_FEATURE_SCHEMA.run_validation(request.data)
        project = get_active_project(projectId, for_actor=request.user)
        feature = create_feature(project=project, **body, actor=request.user)
        return Response(
            FEATURE_SCHEMA.to_representation(feature),
            status=status.HTTP_201_CREATED,
            headers={"Location": feature_location(projectId, feature.name)},
        )

    @extend_schema(
        operation_id="getFeature",
        tags=["Features"],
        summary="Get a feature flag",
        description=(
            "The flag with its environments, strategies, variants, tags, lifecycle stage, "
            "dependencies and collaborators. 404 when the project has no such active flag."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        responses={200: FeatureSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, projectId: str, featureName: str) -> Response:
        feature = load_feature_detail(project_id=projectId, name=featureName, user=request.user)
        return Response(FEATURE_SCHEMA.to_representation(feature))

    @extend_schema(
        operation_id="archiveFeature",
        tags=["Features"],
        summary="Archive a feature flag",
        description=(
            "Archives the flag (202, as Unleash): it leaves the project's flags, its name stays "
            "taken, and a `feature-archived` event is recorded. Archiving an archived flag "
            "changes nothing. Needs `DELETE_FEATURE` in the project."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=None,
        responses={202: OpenApiResponse(description="Archived."), **error_responses(404)},
    )
    def destroy(self, request: Request, projectId: str, featureName: str) -> Response:
        feature = get_project_feature(project_id=projectId, name=featureName)
        archive_feature(feature=feature, actor=request.user)
        return Response(status=status.HTTP_202_ACCEPTED)
