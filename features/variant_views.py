"""A flag's variants per environment, answered as Unleash 8.2's variants controller answers:
`GET`, `PUT` and `PATCH .../environments/:environment/variants`, `PUT .../variants-batch`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.json_patch import apply_json_patch
from features.metadata_serializers import PatchSchemaSerializer
from features.schema import SpecNamedAutoSchema
from features.variant_serializers import (
    VARIANT_LIST,
    CreateVariantSchemaSerializer,
    FeatureVariantsSchemaSerializer,
    PushVariantsSchemaSerializer,
    check_variant_list,
)
from features.variant_services import (
    environment_variants,
    patch_environment_variants,
    set_environment_variants,
    set_variants_in_environments,
)
from features.views import (
    ENVIRONMENT,
    FEATURE_NAME,
    PROJECT_ID,
    get_active_feature_or_404,
    get_project_feature_or_404,
)
from flagadmin.api.errors import bounded_validation_error
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

WEIGHTS = (
    "Weights are stored as Unleash stores them: `fix` ones as sent, what they leave of 1000 "
    "split evenly over the `variable` ones (the remainder to the first ones as sent), the list "
    "sorted by name. Refused (400): a name used twice, no `variable` variant in a list that is "
    "not empty, `fix` weights over 1000, a weight that is no integer from 0 to 1000, a `json` "
    "payload holding no object or array, a `number` payload holding no number (Unleash takes "
    "that one). "
)
LEGACY = (
    "Unleash 8.2 deprecates environment variants: while no environment of the flag has any, "
    "this is 403 `InvalidOperationError` (set them first with `variants-batch`, which has no "
    "such rule, as in Unleash). "
)


def _answer(variants: list[dict[str, Any]]) -> Response:
    return Response({"version": 1, "variants": variants})


def _valid_list(data: Any, location: str = "body") -> list[dict[str, Any]]:
    """`data` as a valid list of variants, else the 400 naming each failing property under
    `location` (`/body/0/weight`; a patched document's are `/variants/0/weight`)."""
    try:
        return check_variant_list(VARIANT_LIST.run_validation(data))
    except serializers.ValidationError as error:
        raise bounded_validation_error(error.detail, data, location) from None


class FeatureEnvironmentVariantsViewSet(AdminApiMixin, viewsets.ViewSet):
    """A flag's variants in one environment (Unleash's environment variants): SDKs pick one of
    them for a user when the flag is on and its strategy has none of its own."""

    schema = SpecNamedAutoSchema()
    required_permissions = {
        "retrieve": perms.NONE,
        "update": perms.UPDATE_FEATURE,
        "partial_update": perms.UPDATE_FEATURE,
        "batch": perms.UPDATE_FEATURE,
    }
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="getEnvironmentFeatureVariants",
        tags=["Features"],
        summary="Get variants for a feature in an environment",
        description=(
            "The flag's variants in the environment, sorted by name (an empty list when it has "
            "none). An archived flag's too, as Unleash answers. 404 for a flag that is not in "
            "the project, or an environment the flag does not have."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        responses={200: FeatureVariantsSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, projectId: str, featureName: str, environment: str):
        feature = get_project_feature_or_404(projectId, featureName)
        return _answer(environment_variants(feature, environment))

    @extend_schema(
        operation_id="overwriteEnvironmentFeatureVariants",
        tags=["Features"],
        summary="Create (overwrite) variants for a feature in an environment",
        description=(
            "Replaces the flag's variants in the environment and records "
            "`feature-environment-variants-updated` with the variants before and after. "
            + WEIGHTS
            + "A variant without `weightType` is `variable` (Unleash answers 400 there, its "
            "schema's default being ignored). "
            + LEGACY
            + "404 for a flag that is not in the project (or archived), or an environment it "
            "does not have. Needs `UPDATE_FEATURE` in the project. Answers with the variants "
            "as stored."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        request=CreateVariantSchemaSerializer(many=True),
        responses={200: FeatureVariantsSchemaSerializer, **error_responses(400, 404, 413, 415)},
    )
    def update(self, request: Request, projectId: str, featureName: str, environment: str):
        variants = _valid_list(request.data)
        feature = get_active_feature_or_404(projectId, featureName)
        stored = set_environment_variants(
            feature=feature, environment=environment, variants=variants, actor=request.user
        )
        return _answer(stored)

    @extend_schema(
        operation_id="patchEnvironmentsFeatureVariants",
        tags=["Features"],
        summary="Patch a feature's variants in an environment",
        description=(
            "Applies a JSON Patch (RFC 6902; paths such as `/0/weight` or `/-`) to the flag's "
            "variants in the environment as `GET` shows them, then stores the result as `PUT` "
            "does, with the same rules (a failing property is named by its path in the patched "
            "list: `/variants/1/name`). " + LEGACY + "A patch that cannot be applied (a failed "
            "`test`, a missing member) is 400. Needs `UPDATE_FEATURE` in the project. Answers "
            "with the variants as stored."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT],
        request=PatchSchemaSerializer(many=True),
        responses={200: FeatureVariantsSchemaSerializer, **error_responses(400, 404, 413, 415)},
    )
    def partial_update(self, request: Request, projectId: str, featureName: str, environment: str):
        body = PatchSchemaSerializer(data=request.data, many=True)
        body.is_valid(raise_exception=True)
        feature = get_active_feature_or_404(projectId, featureName)

        def patched(current: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return _valid_list(apply_json_patch(current, body.validated_data), "variants")

        stored = patch_environment_variants(
            feature=feature, environment=environment, patch=patched, actor=request.user
        )
        return _answer(stored)

    @extend_schema(
        operation_id="overwriteFeatureVariantsOnEnvironments",
        tags=["Features"],
        summary="Create (overwrite) variants for a feature flag in multiple environments",
        description=(
            "Gives the flag the same variants in each of `environments` (at least one; all or "
            "none), recording `feature-environment-variants-updated` for each, in the order "
            "given. A variant without `weightType` is `variable`, without `stickiness` "
            "`default`. "
            + WEIGHTS
            + "404 for a flag that is not in the project (or archived), or an environment it "
            "does not have (Unleash answers 500 for an unknown one). Needs `UPDATE_FEATURE` in "
            "the project. Answers with the variants in the order sent, their weights as "
            "stored, as Unleash answers."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME],
        request=PushVariantsSchemaSerializer,
        responses={200: FeatureVariantsSchemaSerializer, **error_responses(400, 404, 413, 415)},
    )
    def batch(self, request: Request, projectId: str, featureName: str):
        body = PushVariantsSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        sent = body.validated_data["variants"]
        feature = get_active_feature_or_404(projectId, featureName)
        stored = set_variants_in_environments(
            feature=feature,
            environments=body.validated_data["environments"],
            variants=sent,
            actor=request.user,
        )
        by_name = {variant["name"]: variant for variant in stored}
        return _answer([by_name[variant["name"]] for variant in sent])
