"""The feature flag endpoints of a project."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.dependency_services import (
    add_feature_dependency,
    remove_feature_dependencies,
    remove_feature_dependency_by_name,
)
from features.models import Feature, FeatureStrategy
from features.schema import SpecNamedAutoSchema
from features.selectors import detail_queryset, list_project_features, load_feature_detail
from features.serializers import (
    CreateFeatureSchemaSerializer,
    FeatureSchemaSerializer,
    FeatureStrategySchemaSerializer,
)
from features.services import (
    archive_feature,
    archive_features,
    create_feature,
    delete_features,
    revive_features,
)
from features.strategy_serializers import (
    BatchFeaturesSchemaSerializer,
    BulkToggleFeaturesSchemaSerializer,
    CreateDependentFeatureSchemaSerializer,
    CreateFeatureStrategySchemaSerializer,
    ProjectFeaturesSchemaSerializer,
    StrategySortOrderSchemaSerializer,
)
from features.strategy_services import (
    add_feature_strategy,
    as_unleash_put,
    delete_feature_strategy,
    set_feature_environment_enabled,
    set_features_environment_enabled,
    set_strategy_sort_order,
    update_feature_strategy,
)
from flagadmin.api.errors import ArchivedFeatureError, NotFoundError
from flagadmin.api.lookups import get_or_404
from flagadmin.api.renderers import encode_json
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.coalesce import Coalescer
from flagadmin.core.db import in_callers_transaction
from flagadmin.core.models import User
from flagadmin.core.names import URL_SAFE_CHARACTERS
from projects.views import get_project_or_404

PROJECT_ID = OpenApiParameter("projectId", str, OpenApiParameter.PATH, description="Project id.")
FEATURE_NAME = OpenApiParameter("featureName", str, OpenApiParameter.PATH, description="Flag name.")
ENVIRONMENT = OpenApiParameter(
    "environment", str, OpenApiParameter.PATH, description="Environment name."
)
ACTIVATE_DISABLED_STRATEGIES = OpenApiParameter(
    "shouldActivateDisabledStrategies",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description=(
        "`true`: the flag's paused strategies in the environment are enabled again (as "
        "Unleash's UI asks); any other value, or none: they stay paused, and Unleash's default "
        "strategy is added when none is enabled."
    ),
)
STRATEGY_ID = OpenApiParameter(
    "strategyId", str, OpenApiParameter.PATH, description="Strategy id (a UUID)."
)


# Built once: a DRF serializer deep-copies its declared fields on every instantiation, which
# costs more than the work itself (docs/benchmarks.md, "Kept serializers"; the response shapes
# are kept by `serialize`). `run_validation` (what `is_valid` runs) keeps no state between
# calls, so one instance serves every request.
CREATE_FEATURE_SCHEMA = CreateFeatureSchemaSerializer()


# Per process: the reads of a project's flags being computed, by project and caller.
_FLAG_LISTS: Coalescer[bytes] = Coalescer()


def get_project_feature_or_404(
    project_id: str, name: str, queryset: QuerySet[Feature] | None = None
) -> Feature:
    """The flag `name` of project `project_id`, archived or not, from `queryset` (all flags
    by default); 404 otherwise, saying which project has that name when another one does."""
    feature = (Feature.objects.all() if queryset is None else queryset).filter(name=name).first()
    if feature is None or feature.project_id != project_id:
        elsewhere = (
            "."
            if feature is None
            else f', but there\'s a feature with that name in project "{feature.project_id}"'
        )
        raise NotFoundError(
            f'There\'s no feature named "{name}" in project "{project_id}"{elsewhere}'
        )
    return feature


def get_active_feature_or_404(
    project_id: str, name: str, queryset: QuerySet[Feature] | None = None
) -> Feature:
    """As `get_project_feature_or_404`, and 404 for an archived flag too (as Unleash: archived
    flags are read and changed through the archive)."""
    feature = get_project_feature_or_404(project_id, name, queryset)
    if feature.archived_at is not None:
        raise NotFoundError(f"Could not find feature toggle with name {name}")
    return feature


def get_feature_detail_or_404(request: Request, project_id: str, name: str) -> Feature:
    """The active flag with everything `featureSchema` shows, as the caller sees it."""
    return load_feature_detail(
        get_active_feature_or_404(project_id, name, detail_queryset(request.user))
    )


def get_feature_strategy_or_404(
    feature: Feature, environment: str, strategy_id: str
) -> FeatureStrategy:
    """The strategy `strategy_id` (a UUID) of the flag in `environment`; 404 otherwise."""
    try:
        key = uuid.UUID(strategy_id)
    except ValueError:
        key = None  # no strategy has it: 404 without a query
    strategies = FeatureStrategy.objects.filter(
        feature_environment__feature=feature, feature_environment__environment_id=environment
    ).prefetch_related("segment_links")
    return get_or_404(strategies, f"Could not find strategy with id {strategy_id}", pk=key)


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
    required_permissions = {
        "list": perms.NONE,
        "create": perms.CREATE_FEATURE,
        "destroy": perms.DELETE_FEATURE,
    }
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="getFeatures",
        tags=["Features"],
        summary="Get all features in a project",
        description=(
            "The project's active flags, oldest first, each with its tags and, per "
            "environment, whether it is enabled and how many strategies it has. Any "
            "admin-API principal may read. A project that does not exist has no flags: 200 "
            "with none, as Unleash answers."
        ),
        parameters=[PROJECT_ID],
        responses={200: ProjectFeaturesSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request, projectId: str) -> HttpResponse:
        def encoded() -> bytes:
            features = list_project_features(project_id=projectId, user=request.user)
            # Megabytes at thousands of flags: plain data, encoded in one call.
            return encode_json({"version": 2, "features": features})

        if in_callers_transaction() or not settings.PROJECTS_LIST_COALESCE:
            return HttpResponse(encoded(), content_type="application/json")
        # Concurrent reads of one project's flags by one caller (favorites) share one
        # computation begun after they all arrived (flagadmin.core.coalesce): a project's thousands
        # of flags are built once, not once per reader, in time and in memory.
        favorites_of = request.user.pk if isinstance(request.user, User) else None
        body = _FLAG_LISTS.run((projectId, favorites_of), encoded)
        return HttpResponse(body, content_type="application/json")

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
        feature = create_feature(project_id=projectId, **body, actor=request.user)
        return Response(
            serialize(feature, FeatureSchemaSerializer),
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
        feature = get_feature_detail_or_404(request, projectId, featureName)
        return Response(serialize(feature, FeatureSchemaSerializer))

    @extend_schema(
        operation_id="archiveFeature",
        tags=["Features"],
        summary="Archive a feature flag",
        description=(
            "Archives the flag (202, as Unleash): it leaves the project's flags, its name stays "
            "taken, and a `feature-archived` event is recorded. Archiving an archived flag "
            "changes nothing; a flag other flags depend on is 403 `InvalidOperationError`. "
            "Needs `DELETE_FEATURE` in the project."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=None,
        responses={202: OpenApiResponse(description="Archived."), **error_responses(404)},
    )
    def destroy(self, request: Request, projectId: str, featureName: str) -> Response:
        feature = get_project_feature_or_404(projectId, featureName)
        archive_feature(feature=feature, actor=request.user)
        return Response(status=status.HTTP_202_ACCEPTED)


class FeatureEnvironmentViewSet(AdminApiMixin, viewsets.ViewSet):
    """Turn a flag on or off in one environment."""

    schema = SpecNamedAutoSchema()
    required_permission = perms.UPDATE_FEATURE
    project_url_kwarg = "projectId"
    reads_no_body = True

    def _toggle(self, request: Request, projectId: str, featureName: str, environment: str, on):
        # Unleash compares the parameter with 'true', once given.
        activate = request.query_params.getlist("shouldActivateDisabledStrategies") == ["true"]
        feature = get_project_feature_or_404(projectId, featureName)
        if feature.archived_at is not None:
            # As Unleash: an environment the flag lacks is 404 first, then the archive's 400.
            if not feature.environments.filter(environment_id=environment).exists():
                raise NotFoundError(
                    f"Could not find environment {environment} for feature: {featureName}"
                )
            raise ArchivedFeatureError()
        # The answer is read in the write's transaction: a failure reading it undoes the
        # write, so a client that retries after an error never repeats a committed change.
        with transaction.atomic():
            set_feature_environment_enabled(
                feature=feature,
                environment=environment,
                enabled=on,
                actor=request.user,
                activate_disabled_strategies=on and activate,
            )
            detail = get_feature_detail_or_404(request, projectId, featureName)
        return Response(serialize(detail, FeatureSchemaSerializer))

    @extend_schema(
        operation_id="toggleFeatureEnvironmentOn",
        tags=["Features"],
        summary="Enable a feature flag",
        description=(
            "Turns the flag on in the environment and records `feature-environment-enabled`. "
            "With `shouldActivateDisabledStrategies=true` its paused strategies there are "
            "enabled again (`feature-strategy-update` each); otherwise, when none of its "
            "strategies there is enabled, Unleash's default is added first: a "
            "`flexibleRollout` at 100 % (recorded as `feature-strategy-add`). Turning on an "
            "enabled flag changes nothing else. An archived flag is 400 "
            "`ArchivedFeatureError`, as Unleash answers. Needs `UPDATE_FEATURE` in the project "
            "(Owner, Member, Editor, Admin). 404 for an unknown flag, or an environment the "
            "flag has no entry in. No body is read: any content type, or none. Answers with the "
            "whole flag."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT, ACTIVATE_DISABLED_STRATEGIES],
        request=None,
        # 400: an archived flag, or a query that holds a NUL.
        responses={200: FeatureSchemaSerializer, **error_responses(400, 404)},
    )
    def on(self, request: Request, projectId: str, featureName: str, environment: str):
        return self._toggle(request, projectId, featureName, environment, True)

    @extend_schema(
        operation_id="toggleFeatureEnvironmentOff",
        tags=["Features"],
        summary="Disable a feature flag",
        description=(
            "Turns the flag off in the environment and records "
            "`feature-environment-disabled`; its strategies stay. Turning off a disabled flag "
            "changes nothing; an archived flag is 400 `ArchivedFeatureError`. Needs "
            "`UPDATE_FEATURE` in the project. No body is read: any content type, or none. "
            "Answers with the whole flag."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        request=None,
        # 400: an archived flag.
        responses={200: FeatureSchemaSerializer, **error_responses(400, 404)},
    )
    def off(self, request: Request, projectId: str, featureName: str, environment: str):
        return self._toggle(request, projectId, featureName, environment, False)


class FeatureStrategyViewSet(AdminApiMixin, viewsets.ViewSet):
    """The strategies of a flag in one environment."""

    schema = SpecNamedAutoSchema()
    required_permissions = {
        "list": perms.NONE,
        "retrieve": perms.NONE,
        "create": perms.UPDATE_FEATURE,
        "update": perms.UPDATE_FEATURE,
        "destroy": perms.UPDATE_FEATURE,
        "set_sort_order": perms.UPDATE_FEATURE,
    }
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="getFeatureStrategies",
        tags=["Features"],
        summary="Get strategies for a feature flag in an environment",
        description="The flag's strategies in the environment, in their sort order.",
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        responses={200: FeatureStrategySchemaSerializer(many=True), **error_responses(404)},
    )
    def list(self, request: Request, projectId: str, featureName: str, environment: str):
        feature = get_active_feature_or_404(projectId, featureName)
        detail = get_feature_detail_or_404(request, projectId, feature.name)
        for env in detail.environment_list:
            if env.environment_id == environment:
                return Response(serialize(env.strategy_list, FeatureStrategySchemaSerializer))
        raise NotFoundError(f'Environment "{environment}" is not enabled for flag "{featureName}"')

    @extend_schema(
        operation_id="addFeatureStrategy",
        tags=["Features"],
        summary="Add a strategy to a feature flag",
        description=(
            "Adds a strategy to the flag in the environment (last, unless `sortOrder` is "
            "given) and records `feature-strategy-add`. Variant weights are stored as Unleash "
            "stores them: `fix` ones as sent, what they leave of 1000 split evenly over the "
            "`variable` ones (the remainder to the first ones as sent), sorted by name. Needs "
            "`UPDATE_FEATURE` in the project. Answers 200 with the strategy, as Unleash."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        request=CreateFeatureStrategySchemaSerializer,
        responses={
            200: FeatureStrategySchemaSerializer,
            **error_responses(400, 404, 413, 415),
        },
    )
    def create(self, request: Request, projectId: str, featureName: str, environment: str):
        body = CreateFeatureStrategySchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        feature = get_active_feature_or_404(projectId, featureName)
        # Answered from the write's transaction (see `FeatureEnvironmentViewSet._toggle`).
        with transaction.atomic():
            strategy = add_feature_strategy(
                feature=feature, environment=environment, **body.validated_data, actor=request.user
            )
            answer = self._strategy(feature, environment, str(strategy.id))
        return Response(answer)

    @extend_schema(
        operation_id="getFeatureStrategy",
        tags=["Features"],
        summary="Get a strategy configuration",
        description="One strategy of the flag in the environment; 404 for an unknown id.",
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT, STRATEGY_ID],
        responses={200: FeatureStrategySchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request, projectId: str, featureName: str, environment: str, strategyId):
        feature = get_active_feature_or_404(projectId, featureName)
        return Response(self._strategy(feature, environment, strategyId))

    @extend_schema(
        operation_id="updateFeatureStrategy",
        tags=["Features"],
        summary="Update a strategy",
        description=(
            "Replaces the strategy's definition as Unleash does: name, parameters, constraints "
            "and variants as sent; `disabled`, `title` and `segments` stay as they are when "
            "left out (or null); the sort order never changes here. Records "
            "`feature-strategy-update` with "
            "the strategy before and after. Variant weights are fixed as Unleash fixes them. "
            "Pausing (`disabled: true`) the last enabled strategy turns the flag off in the "
            "environment (`feature-environment-disabled`), as Unleash does. Needs "
            "`UPDATE_FEATURE` in the project."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT, STRATEGY_ID],
        request=CreateFeatureStrategySchemaSerializer,
        responses={
            200: FeatureStrategySchemaSerializer,
            **error_responses(400, 404, 413, 415),
        },
    )
    def update(self, request, projectId: str, featureName: str, environment: str, strategyId):
        body = CreateFeatureStrategySchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        feature = get_active_feature_or_404(projectId, featureName)
        definition = as_unleash_put(body.validated_data, request.data)
        # Answered from the write's transaction (see `FeatureEnvironmentViewSet._toggle`).
        with transaction.atomic():
            update_feature_strategy(
                feature=feature,
                environment=environment,
                strategy=get_feature_strategy_or_404(feature, environment, strategyId),
                **definition,
                actor=request.user,
            )
            answer = self._strategy(feature, environment, strategyId)
        return Response(answer)

    @extend_schema(
        operation_id="deleteFeatureStrategy",
        tags=["Features"],
        summary="Delete a strategy from a feature flag",
        description=(
            "Removes the strategy and records `feature-strategy-remove`. When no enabled "
            "strategy is left, the flag is turned off in the environment "
            "(`feature-environment-disabled`), as Unleash does. Needs `UPDATE_FEATURE` in the "
            "project."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT, STRATEGY_ID],
        request=None,
        responses={200: OpenApiResponse(description="Deleted."), **error_responses(404)},
    )
    def destroy(self, request, projectId: str, featureName: str, environment: str, strategyId):
        feature = get_active_feature_or_404(projectId, featureName)
        delete_feature_strategy(
            feature=feature,
            environment=environment,
            strategy=get_feature_strategy_or_404(feature, environment, strategyId),
            actor=request.user,
        )
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="setStrategySortOrder",
        tags=["Features"],
        summary="Set strategy sort order",
        description=(
            "Gives the listed strategies of the flag in the environment their new sort order "
            "(the order SDKs evaluate them in) and records `strategy-order-changed` with the "
            "strategy ids in order before and after. An id that is not one of those "
            "strategies is 400 and changes nothing. Needs `UPDATE_FEATURE` in the project. "
            "200, no body."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        request=StrategySortOrderSchemaSerializer(many=True),
        responses={
            200: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def set_sort_order(self, request: Request, projectId: str, featureName: str, environment):
        body = StrategySortOrderSchemaSerializer(data=request.data, many=True)
        body.is_valid(raise_exception=True)
        feature = get_active_feature_or_404(projectId, featureName)
        set_strategy_sort_order(
            feature=feature,
            environment=environment,
            sort_orders=[(item["id"], item["sortOrder"]) for item in body.validated_data],
            actor=request.user,
        )
        return Response(status=status.HTTP_200_OK)

    @staticmethod
    def _strategy(feature, environment: str, strategy_id: str) -> dict:
        strategy = get_feature_strategy_or_404(feature, environment, strategy_id)
        return serialize(strategy, FeatureStrategySchemaSerializer)


class FeatureDependencyViewSet(AdminApiMixin, viewsets.ViewSet):
    """A flag's dependencies on parent flags (Unleash's dependent features)."""

    schema = SpecNamedAutoSchema()
    required_permission = perms.UPDATE_FEATURE
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="addFeatureDependency",
        tags=["Dependencies"],
        summary="Add a feature dependency.",
        description=(
            "Makes the flag depend on the parent `feature` (or changes how): the flag is on "
            "only when the parent is enabled (`enabled: false`: disabled) and, when "
            "`variants` are given, resolves to one of them. Refused as Unleash refuses it: "
            "403 `InvalidOperationError` for the flag itself, a chain (dependencies are one "
            "level deep) or no active parent of that name; 404 when the two flags are not "
            "both in the project. Records `feature-dependency-added`. Needs `UPDATE_FEATURE` "
            "in the project. 200, no body."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=CreateDependentFeatureSchemaSerializer,
        responses={
            200: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def add(self, request: Request, projectId: str, featureName: str) -> Response:
        body = CreateDependentFeatureSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        add_feature_dependency(
            project_id=projectId,
            child_name=featureName,
            parent_name=data["feature"],
            enabled=data["enabled"],
            variants=data.get("variants"),
            actor=request.user,
        )
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="deleteFeatureDependencies",
        tags=["Dependencies"],
        summary="Deletes feature dependencies.",
        description=(
            "The flag depends on no flag any more (`feature-dependencies-removed`). 404 when "
            "it depended on none. Needs `UPDATE_FEATURE` in the project. 200, no body."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=None,
        responses={
            200: OpenApiResponse(description="This response has no body."),
            **error_responses(404),
        },
    )
    def remove_all(self, request: Request, projectId: str, featureName: str) -> Response:
        if not remove_feature_dependencies(
            project_id=projectId, child_name=featureName, actor=request.user
        ):
            raise NotFoundError(
                f'Feature "{featureName}" has no dependencies to remove in project "{projectId}".'
            )
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="deleteFeatureDependency",
        tags=["Dependencies"],
        summary="Deletes a feature dependency.",
        description=(
            "The flag no longer depends on `parent` (`feature-dependency-removed`). 404 when "
            "it did not. Needs `UPDATE_FEATURE` in the project. 200, no body."
        ),
        parameters=[
            PROJECT_ID,
            FEATURE_NAME,
            OpenApiParameter("parent", str, OpenApiParameter.PATH, description="Parent flag."),
        ],
        request=None,
        responses={
            200: OpenApiResponse(description="This response has no body."),
            **error_responses(404),
        },
    )
    def remove(self, request: Request, projectId: str, featureName: str, parent: str):
        if not remove_feature_dependency_by_name(
            project_id=projectId, child_name=featureName, parent_name=parent, actor=request.user
        ):
            raise NotFoundError(
                f'No dependency on "{parent}" for feature "{featureName}" in project "{projectId}".'
            )
        return Response(status=status.HTTP_200_OK)


class ProjectFeatureBatchViewSet(AdminApiMixin, viewsets.ViewSet):
    """Archive, revive or delete several flags of a project."""

    schema = SpecNamedAutoSchema()
    required_permissions = {
        "archive": perms.DELETE_FEATURE,
        "revive": perms.UPDATE_FEATURE,
        # Not `delete`: a view's attribute of that name would also answer HTTP DELETE.
        "delete_archived": perms.DELETE_FEATURE,
        "bulk_on": perms.UPDATE_FEATURE,
        "bulk_off": perms.UPDATE_FEATURE,
    }
    project_url_kwarg = "projectId"

    def _bulk_toggle(self, request: Request, projectId: str, environment: str, on: bool):
        body = BulkToggleFeaturesSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project = get_project_or_404(projectId)
        activate = request.query_params.getlist("shouldActivateDisabledStrategies") == ["true"]
        set_features_environment_enabled(
            project_id=project.pk,
            names=body.validated_data["features"],
            environment=environment,
            enabled=on,
            actor=request.user,
            activate_disabled_strategies=on and activate,
        )
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="bulkToggleFeaturesEnvironmentOn",
        tags=["Features"],
        summary="Bulk enable a list of features",
        description=(
            "Turns the named flags of the project on in the environment, each as "
            "`toggleFeatureEnvironmentOn` does (`shouldActivateDisabledStrategies` too), all "
            "or none: 404 for a name that is no flag of the project, 400 "
            "`ArchivedFeatureError` for an archived flag. Needs `UPDATE_FEATURE` in the "
            "project. 200, no body."
        ),
        parameters=[PROJECT_ID, ENVIRONMENT, ACTIVATE_DISABLED_STRATEGIES],
        request=BulkToggleFeaturesSchemaSerializer,
        responses={
            200: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def bulk_on(self, request: Request, projectId: str, environment: str) -> Response:
        return self._bulk_toggle(request, projectId, environment, True)

    @extend_schema(
        operation_id="bulkToggleFeaturesEnvironmentOff",
        tags=["Features"],
        summary="Bulk disable a list of features",
        description=(
            "Turns the named flags of the project off in the environment, each as "
            "`toggleFeatureEnvironmentOff` does, all or none (the same refusals as the bulk "
            "`on`). Needs `UPDATE_FEATURE` in the project. 200, no body."
        ),
        parameters=[PROJECT_ID, ENVIRONMENT],
        request=BulkToggleFeaturesSchemaSerializer,
        responses={
            200: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def bulk_off(self, request: Request, projectId: str, environment: str) -> Response:
        return self._bulk_toggle(request, projectId, environment, False)

    @staticmethod
    def _batch(request: Request, projectId: str) -> dict[str, Any]:
        """The project and the flag names of a batch body (400 first, then 404)."""
        body = BatchFeaturesSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return {"project": get_project_or_404(projectId), "names": body.validated_data["features"]}

    @extend_schema(
        operation_id="archiveFeatures",
        tags=["Features"],
        summary="Archives a list of features",
        description=(
            "Archives the named flags of the project, each as `archiveFeature` does (one "
            "`feature-archived` event each). Names of no flag and archived flags are skipped; "
            "a flag of another project is 400; a flag that a flag left out of the list depends "
            "on is 403 `InvalidOperationError`. Needs `DELETE_FEATURE` in the project. 202."
        ),
        parameters=[PROJECT_ID],
        request=BatchFeaturesSchemaSerializer,
        responses={
            202: OpenApiResponse(description="Archived."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def archive(self, request: Request, projectId: str) -> Response:
        archive_features(**self._batch(request, projectId), actor=request.user)
        return Response(status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="reviveFeatures",
        tags=["Archive"],
        summary="Revives a list of features",
        description=(
            "Brings the named archived flags of the project back, disabled in every "
            "environment, and records `feature-revived` for each. Unknown names and active "
            "flags are skipped; a flag of another project is 400. Needs `UPDATE_FEATURE` in "
            "the project."
        ),
        parameters=[PROJECT_ID],
        request=BatchFeaturesSchemaSerializer,
        responses={
            200: OpenApiResponse(description="Revived."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def revive(self, request: Request, projectId: str) -> Response:
        revive_features(**self._batch(request, projectId), actor=request.user)
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="deleteFeatures",
        tags=["Archive"],
        summary="Deletes a list of features",
        description=(
            "Deletes the named archived flags of the project for good, and records "
            "`feature-deleted` for each. Unknown names and active flags are skipped; a flag of "
            "another project is 400; a flag that another flag depends on is 403 "
            "`InvalidOperationError`. Needs `DELETE_FEATURE` in the project."
        ),
        parameters=[PROJECT_ID],
        request=BatchFeaturesSchemaSerializer,
        responses={
            200: OpenApiResponse(description="Deleted."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def delete_archived(self, request: Request, projectId: str) -> Response:
        delete_features(**self._batch(request, projectId), actor=request.user)
        return Response(status=status.HTTP_200_OK)
