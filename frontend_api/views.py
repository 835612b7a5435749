"""The Frontend API for browser and mobile apps under /api/frontend (Unleash 8.2's
`frontend-api-controller.ts`): the enabled flags for a context, decided by `evaluation.engine`
over the client payload of the token's environment; the apps' metrics and registration."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request

from client_api.serializers import ClientMetricsSchemaSerializer, parse_client_metrics
from client_api.views import ClientApiView
from features.metrics_services import record_client_metrics, register_client_instance
from flagadmin.api.errors import EndpointNotImplementedError
from flagadmin.api.schema import error_responses
from flagadmin.api.views import NoRouteMixin
from frontend_api.answers import toggles_response
from frontend_api.authentication import FrontendPrincipal, FrontendTokenAuthentication, IsFrontend
from frontend_api.context import context_from_body, context_from_query, query_items
from frontend_api.serializers import (
    FrontendApiClientSchemaSerializer,
    FrontendApiFeaturesPostSchemaSerializer,
    FrontendApiFeaturesSchemaSerializer,
)

TAGS = ["Frontend API"]
# The admin API's scheme (a token in the `Authorization` header), as Unleash's document names
# it; which kind of token each operation takes, its description says.
AUTH = [{"apiKey": []}]
OK = OpenApiResponse(description="`OK` (text/plain), as Unleash answers.")
CONTEXT_QUERY = [
    OpenApiParameter(
        "context",
        {"type": "object", "additionalProperties": {"type": "string"}},
        OpenApiParameter.QUERY,
        style="form",
        explode=True,
        required=False,
        description="The context, one parameter per field (`userId`, `sessionId`, "
        "`remoteAddress`, `appName`, `environment`, any other field), properties as "
        "`properties[name]=value` or as plain fields. `remoteAddress` defaults to the "
        "caller's address, `sessionId` to a new random one.",
    )
]


class FrontendApiView(ClientApiView):
    """Frontend tokens only (401 without one or for an unknown one, 403 for any other kind);
    the client API's checks of body size and content type."""

    authentication_classes = [FrontendTokenAuthentication]
    permission_classes = [IsFrontend]


class UnknownFrontendPathView(NoRouteMixin, FrontendApiView):
    """Anything under /api/frontend/ that no route matches: a frontend token's 404."""


class NotImplementedView(FrontendApiView):
    schema = None  # Unleash leaves these out of its document too

    def get(self, request: Request) -> HttpResponse:
        raise EndpointNotImplementedError.stated()


class FrontendFeaturesView(FrontendApiView):
    @extend_schema(
        operation_id="getFrontendFeatures",
        tags=TAGS,
        auth=AUTH,
        summary="Retrieve enabled feature flags for the provided context.",
        description="The flags of the token's projects that are enabled in the token's "
        "environment for the context given as query parameters, each with its variant and "
        "`impressionData`. Answers with an `ETag` (Express's, so equal bodies have Unleash's "
        "ETag); `If-None-Match` naming it gets 304. Frontend tokens only.",
        parameters=CONTEXT_QUERY,
        responses={
            200: OpenApiResponse(FrontendApiFeaturesSchemaSerializer, description="The flags."),
            304: OpenApiResponse(description="Not modified since the ETag sent."),
            **error_responses(),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        given = context_from_query(query_items(request.GET))
        return toggles_response(request, request.user, given)

    @extend_schema(
        operation_id="getFrontendApiFeaturesWithPost",
        tags=TAGS,
        auth=AUTH,
        summary="Retrieve enabled feature flags for the provided context, using POST.",
        description="As the GET, with the context as the body's `context` object. Its known "
        "fields are strings (a number, boolean or null is taken as its text, as Unleash "
        "coerces it).",
        request=FrontendApiFeaturesPostSchemaSerializer,
        responses={
            200: OpenApiResponse(FrontendApiFeaturesSchemaSerializer, description="The flags."),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        given = context_from_body(request.data)
        return toggles_response(request, request.user, given)


class FrontendMetricsView(FrontendApiView):
    @extend_schema(
        operation_id="registerFrontendMetrics",
        tags=TAGS,
        auth=AUTH,
        summary="Register client usage metrics",
        description="How often each flag was evaluated to on and off in a browser or app: "
        "added to the same hourly counts and `lastSeenAt` as server SDKs' metrics, in the "
        "token's environment (flags outside the token's projects are ignored). With an "
        "`instanceId` and the `Unleash-SDK` header the instance is remembered as an SDK's "
        "registration is.",
        request=ClientMetricsSchemaSerializer,
        responses={200: OK, **error_responses(400, 413, 415)},
    )
    def post(self, request: Request) -> HttpResponse:
        app_name, counts = parse_client_metrics(request.data)
        principal: FrontendPrincipal = request.user
        record_client_metrics(
            environment=principal.environment,
            app_name=app_name,
            counts=counts,
            projects=principal.projects,
        )
        instance_id = request.data.get("instanceId")
        sdk_version = request.META.get("HTTP_UNLEASH_SDK")
        if isinstance(instance_id, str) and instance_id and sdk_version:
            register_client_instance(
                environment=principal.environment,
                app_name=app_name,
                instance_id=instance_id,
                sdk_version=sdk_version[:255],
            )
        return HttpResponse(b"OK", content_type="text/plain; charset=utf-8")


class FrontendRegisterView(FrontendApiView):
    @extend_schema(
        operation_id="registerFrontendClient",
        tags=TAGS,
        auth=AUTH,
        summary="Register a client SDK",
        description="Checked and answered 200, as Unleash answers it (frontend SDKs do not "
        "register; some expect the 200).",
        request=FrontendApiClientSchemaSerializer,
        responses={200: OK, **error_responses(400, 413, 415)},
    )
    def post(self, request: Request) -> HttpResponse:
        FrontendApiClientSchemaSerializer(data=request.data).is_valid(raise_exception=True)
        return HttpResponse(b"OK", content_type="text/plain; charset=utf-8")
