"""Changing part of a strategy with a JSON Patch (Unleash's `patchFeatureStrategy`)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from features.json_patch import apply_json_patch
from features.metadata_serializers import PatchSchemaSerializer
from features.models import FeatureStrategy
from features.serializers import FeatureStrategySchemaSerializer
from features.strategy_serializers import CreateFeatureStrategySchemaSerializer
from features.strategy_services import as_unleash_put, update_feature_strategy_from_stored
from features.views import (
    ENVIRONMENT,
    FEATURE_NAME,
    PROJECT_ID,
    STRATEGY_ID,
    FeatureStrategyViewSet,
    get_active_feature_or_404,
    get_feature_strategy_or_404,
)
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.core import permissions as perms

# Members of the strategy document that a patch cannot change (Unleash's store ignores them).
READ_ONLY_MEMBERS = ("id", "featureName", "sortOrder")


class FeatureStrategyPatchViewSet(FeatureStrategyViewSet):
    """The strategies of a flag in one environment."""

    required_permissions = {
        **FeatureStrategyViewSet.required_permissions,
        "partial_update": perms.UPDATE_FEATURE,
    }

    @extend_schema(
        operation_id="patchFeatureStrategy",
        tags=["Features"],
        summary="Change specific properties of a strategy",
        description=(
            "Applies a JSON Patch (RFC 6902; paths such as `/parameters/rollout` or "
            "`/constraints/0/values/-`) to the strategy as `getFeatureStrategy` shows it, then "
            "stores the result as `updateFeatureStrategy` does, with the same validation: "
            "`id`, `featureName` and `sortOrder` do not change; a `title` or `disabled` that "
            "is removed or null, and removed `segments`, stay as they were. Records "
            "`feature-strategy-update` with the strategy before and after; pausing the last "
            "enabled strategy turns the flag off in the environment "
            "(`feature-environment-disabled`), as Unleash does. A patch that cannot be applied "
            "(a failed `test`, a missing member) is 400 (Unleash 8.2 answers 500). Needs "
            "`UPDATE_FEATURE` in the project."
        ),
        parameters=[PROJECT_ID, FEATURE_NAME, ENVIRONMENT, STRATEGY_ID],
        request=PatchSchemaSerializer(many=True),
        responses={
            200: FeatureStrategySchemaSerializer,
            **error_responses(400, 404, 413, 415),
        },
    )
    def partial_update(
        self, request: Request, projectId: str, featureName: str, environment: str, strategyId
    ) -> Response:
        body = PatchSchemaSerializer(data=request.data, many=True)
        body.is_valid(raise_exception=True)
        feature = get_active_feature_or_404(projectId, featureName)

        def patched() -> tuple[FeatureStrategy, dict[str, Any]]:
            strategy = get_feature_strategy_or_404(feature, environment, strategyId)
            document = apply_json_patch(
                serialize(strategy, FeatureStrategySchemaSerializer), body.validated_data
            )
            if isinstance(document, dict):
                for member in READ_ONLY_MEMBERS:
                    document.pop(member, None)
            values = CreateFeatureStrategySchemaSerializer(data=document)
            values.is_valid(raise_exception=True)
            return strategy, as_unleash_put(values.validated_data, document)

        # Answered from the write's transaction (see `FeatureEnvironmentViewSet._toggle`).
        with transaction.atomic():
            update_feature_strategy_from_stored(
                feature=feature, environment=environment, change=patched, actor=request.user
            )
            answer = self._strategy(feature, environment, strategyId)
        return Response(answer)
