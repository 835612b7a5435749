"""`POST /api/admin/playground` and `POST /api/admin/playground/advanced`: every flag decided for
a context, with why (Unleash 8.2's `getPlayground` and `getAdvancedPlayground`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from evaluation.playground import advanced_playground, playground
from evaluation.serializers import (
    AdvancedPlaygroundRequestSchemaSerializer,
    AdvancedPlaygroundResponseSchemaSerializer,
    PlaygroundRequestSchemaSerializer,
    PlaygroundResponseSchemaSerializer,
    projects_of,
)
from features.schema import SpecNamedAutoSchema
from flagadmin.api.renderers import encode_json
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

HOW = (
    " Each flag's `isEnabled` and `variant` are decided by Yggdrasil, Unleash's own engine, over "
    "the environment's client payload (what SDKs receive); each strategy's, constraint's and "
    "segment's `result` by the same engine, one piece at a time. Any admin-API principal may "
    "ask (Unleash: no permission beyond signing in); client tokens get 403."
)


def _input(body: dict[str, Any], validated: dict[str, Any]) -> dict[str, Any]:
    """The request as Unleash echoes it: the fields it knows, as sent and checked."""
    return {key: validated[key] for key in body if key in validated}


class PlaygroundView(AdminApiMixin, APIView):
    required_permission = perms.NONE
    schema = SpecNamedAutoSchema()

    @extend_schema(
        operation_id="getPlayground",
        tags=["Playground"],
        summary="Evaluate an Unleash context against a set of environments and projects.",
        description="Every flag of `projects` (default: all) in `environment`, decided for "
        "`context`, by name, with why: whether it is enabled in the environment, each "
        "strategy's result with its constraints' and segments', an unsatisfied dependency, "
        "the variant. The context's `environment` field is `default` unless given, as in the "
        "SDK Unleash's playground evaluates with. An unknown environment has every flag off." + HOW,
        request=PlaygroundRequestSchemaSerializer,
        responses={
            200: OpenApiResponse(PlaygroundResponseSchemaSerializer),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        body = PlaygroundRequestSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        validated = body.validated_data
        features = playground(
            environment=validated["environment"],
            projects=projects_of(validated),
            context=validated["context"],
        )
        answer = {"input": _input(request.data, validated), "features": features}
        return HttpResponse(encode_json(answer), content_type="application/json")


class AdvancedPlaygroundView(AdminApiMixin, APIView):
    required_permission = perms.NONE
    schema = SpecNamedAutoSchema()

    @extend_schema(
        operation_id="getAdvancedPlayground",
        tags=["Playground"],
        summary="Batch evaluate an Unleash context against a set of environments and projects.",
        description="As `POST /api/admin/playground`, in each of `environments`, for every "
        "combination of the context's values: a value with commas is several values "
        '(`userId: "a,b"` is two contexts), properties are split too and flattened into '
        "each combination. Per flag, per environment, one answer per combination. At most "
        "15,000 evaluations (environments x flags x combinations): more is 400. Top-level "
        "context fields that are neither strings nor `properties` are left out and named in "
        "`warnings.invalidContextProperties`." + HOW,
        request=AdvancedPlaygroundRequestSchemaSerializer,
        responses={
            200: OpenApiResponse(AdvancedPlaygroundResponseSchemaSerializer),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        body = AdvancedPlaygroundRequestSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        validated = body.validated_data
        features, removed = advanced_playground(
            environments=validated["environments"],
            projects=projects_of(validated),
            context=validated["context"],
        )
        answer: dict[str, Any] = {"features": features, "input": _input(request.data, validated)}
        if removed:
            answer["warnings"] = {"invalidContextProperties": removed}
        return HttpResponse(encode_json(answer), content_type="application/json")
