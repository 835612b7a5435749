"""The client API that SDKs use: /api/client/features, /register, /metrics."""

from __future__ import annotations

import re
from dataclasses import replace

from django.conf import settings
from django.http import HttpResponse, HttpResponseNotModified
from django.utils.http import parse_etags
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from client_api import selectors
from client_api.authentication import ClientPrincipal, ClientTokenAuthentication, IsClient
from client_api.schema import ClientTokenScheme  # noqa: F401  (registers the scheme)
from client_api.selectors import client_feature_list, client_features, effective_projects
from client_api.serializers import (
    CLIENT_FEATURES_QUERY,
    ClientApplicationSchemaSerializer,
    ClientFeatureSchemaSerializer,
    ClientFeaturesSchemaSerializer,
    ClientMetricsSchemaSerializer,
    parse_client_metrics,
    parse_feature_filter,
)
from features.metrics_services import record_client_metrics, register_client_instance
from flagadmin.api.errors import (
    ContentTooLargeError,
    ContentTypeError,
    LengthRequiredError,
    NotFoundError,
    ValidationError,
)
from flagadmin.api.schema import error_responses
from flagadmin.api.views import BODY_METHODS, NoRouteMixin
from flagadmin.core.tokens import current_revision


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names `etag`, compared weakly as the header asks (RFC
    9110, 13.1.2): the production stack's nginx, when it gzips the answer, hands the ETag out
    as `W/"..."`, and SDKs send back what they were given. A list of ETags, or `*`, too."""
    if not if_none_match:
        return False
    return any(
        candidate == "*" or candidate.removeprefix("W/") == etag
        for candidate in parse_etags(if_none_match)
    )


# Unleash's client specification: SDKs send the version they implement in this header, and
# from 4.2 on they resolve segments by id (Unleash's ClientSpecService).
CLIENT_SPEC_HEADER = "Unleash-Client-Spec"
SEGMENTS_SPEC = (4, 2, 0)
# A semantic version as node-semver reads one strictly, in its canonical form (no `v`, no
# leading zeros), the parts within JavaScript's safe integers.
STRICT_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?"
)
MAX_SAFE_INTEGER = 2**53 - 1
CLIENT_SPEC = OpenApiParameter(
    CLIENT_SPEC_HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "The client specification the SDK implements (a semantic version, e.g. `5.2.0`). From "
        "`4.2.0` on, as Unleash 8.2: strategies name their segments by id (`segments`) and the "
        "segments in use are listed once at the top level; before, or without the header, "
        "their constraints are inlined into the strategies'. Not a semantic version: 400."
    ),
)


def announces_segments(header: str | None) -> bool:
    """Whether an SDK's `Unleash-Client-Spec` header asks for segments by id (4.2.0 or later,
    a pre-release of 4.2.0 being earlier), as Unleash's `requestSupportsSpec(req, 'segments')`
    decides; 400 with Unleash's messages for a value that is no strict semantic version."""
    version = (header or "").strip()
    if not version:
        return False
    matched = STRICT_SEMVER_RE.fullmatch(version)
    numbers = tuple(int(part) for part in matched.groups()[:3]) if matched else ()
    if not numbers or max(numbers) > MAX_SAFE_INTEGER:
        kind = "SemVer" if version[0].isdigit() else "prefix"
        message = f'Invalid {kind} in the {CLIENT_SPEC_HEADER} header: "{version}".'
        raise ValidationError.stated(message)
    prerelease = matched.group(4) is not None
    return numbers > SEGMENTS_SPEC or (numbers == SEGMENTS_SPEC and not prerelease)


def _segments_asked(request: Request) -> bool:
    return announces_segments(request.META.get("HTTP_UNLEASH_CLIENT_SPEC"))


class ClientApiView(APIView):
    """Client tokens only (admin and personal tokens: 403, as Unleash); the admin API's checks
    of body size and content type."""

    authentication_classes = [ClientTokenAuthentication]
    permission_classes = [IsClient]

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if request.method in BODY_METHODS:
            length = request.META.get("CONTENT_LENGTH") or "0"
            if length.isdigit() and int(length) > settings.MAX_REQUEST_BODY_BYTES:
                raise ContentTooLargeError()
            content_type = request.META.get("CONTENT_TYPE", "")
            if content_type.split(";", 1)[0].strip().lower() != "application/json":
                raise ContentTypeError(content_type or None)
            if (
                request.META.get("CONTENT_LENGTH") in (None, "", "0")
                and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
            ):
                raise LengthRequiredError()

    # DRF's content negotiation and version checks add nothing for these fixed JSON answers.
    def perform_content_negotiation(self, request: Request, force: bool = False):
        renderer = self.renderer_classes[0]()
        return renderer, renderer.media_type


class UnknownClientPathView(NoRouteMixin, ClientApiView):
    """Anything under /api/client/ that no route matches: a client token's 404 (401 without
    one, 403 for an admin token, as Unleash), whatever the method or body."""


class ClientFeaturesView(ClientApiView):
    @extend_schema(
        operation_id="getAllClientFeatures",
        tags=["Client"],
        summary="Get all flags (SDK)",
        description=(
            "The flags of the token's projects with their state and enabled strategies in the "
            "token's environment, for SDKs to evaluate locally. Answers with an `ETag`; a "
            "request whose `If-None-Match` carries it gets 304 Not Modified while nothing "
            "changed. Client tokens only: admin and personal tokens get 403. `tag`, `project` "
            "(for a token of every project) and `namePrefix` narrow the flags, as Unleash's "
            "SDK options do; other parameters are ignored. SDKs that announce client "
            "specification 4.2 or later (`Unleash-Client-Spec`) get segments at the top level "
            "(`segments`) and strategies naming them by id: a body and an ETag of its own."
        ),
        parameters=[*CLIENT_FEATURES_QUERY, CLIENT_SPEC],
        responses={
            200: OpenApiResponse(
                ClientFeaturesSchemaSerializer, description="clientFeaturesSchema"
            ),
            304: OpenApiResponse(description="Not modified since the ETag sent."),
            **error_responses(400),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        arrived = selectors.now()
        client: ClientPrincipal = request.user
        # The header first, as Unleash reads it before the query.
        segments = _segments_asked(request)
        narrowed = parse_feature_filter(request.query_params)
        found = client_features(
            projects=client.projects,
            environment=client.environment,
            revision=client.revision,
            narrowed=narrowed,
            segments=segments,
        )
        if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
        if if_none_match and not etag_matches(if_none_match, found.etag):
            # The SDK holds another state, maybe a newer one from another worker: answer
            # from the database's state now, never from an older one than it has seen.
            found = client_features(
                projects=client.projects,
                environment=client.environment,
                revision=current_revision(),
                narrowed=narrowed,
                since=arrived,
                segments=segments,
            )
        if etag_matches(if_none_match, found.etag):
            response = HttpResponseNotModified()
        else:
            response = HttpResponse(found.body, content_type="application/json")
        response["ETag"] = found.etag
        return response


class ClientFeatureView(ClientApiView):
    @extend_schema(
        operation_id="getClientFeature",
        tags=["Client"],
        summary="Get one flag (SDK)",
        description=(
            "One flag of the token's projects as `GET /api/client/features` gives it, in the "
            "token's environment; 404 for a flag that is not there (archived, another "
            "project, no such flag). The same query parameters narrow it, and the same "
            "`Unleash-Client-Spec` header decides how its strategies carry their segments (the "
            "segments themselves are listed by `GET /api/client/features` only, as Unleash "
            "answers). Client tokens only."
        ),
        parameters=[*CLIENT_FEATURES_QUERY, CLIENT_SPEC],
        responses={
            200: OpenApiResponse(ClientFeatureSchemaSerializer, description="clientFeatureSchema"),
            **error_responses(400, 404),
        },
    )
    def get(self, request: Request, featureName: str) -> Response:
        client: ClientPrincipal = request.user
        segments = _segments_asked(request)
        narrowed = parse_feature_filter(request.query_params)
        flags = client_feature_list(
            projects=effective_projects(client.projects, narrowed),
            environment=client.environment,
            narrowed=replace(narrowed, name_prefix=featureName),
            inline_segments=not segments,
        )
        for flag in flags:
            if flag["name"] == featureName:
                return Response(flag)
        raise NotFoundError(f"Could not find feature flag {featureName}")


class ClientRegisterView(ClientApiView):
    @extend_schema(
        operation_id="registerClientApplication",
        tags=["Client"],
        summary="Register a client SDK",
        description="SDKs call this when they start: the instance is remembered with its SDK "
        "version and the strategies it knows. 202.",
        request=ClientApplicationSchemaSerializer,
        responses={
            202: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        body = ClientApplicationSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        register_client_instance(
            environment=request.user.environment,
            app_name=data["appName"],
            instance_id=data["instanceId"],
            sdk_version=data["sdkVersion"],
            strategies=data["strategies"],
            interval=data["interval"],
            started_at=data["started"],
        )
        return Response(status=status.HTTP_202_ACCEPTED)


class ClientMetricsView(ClientApiView):
    @extend_schema(
        operation_id="registerClientMetrics",
        tags=["Client"],
        summary="Register client usage metrics",
        description=(
            "How often each flag was evaluated to on (`yes`) and off (`no`): added to the "
            "flag's hourly counts in the token's environment, and sets the flag's `lastSeenAt` "
            "there (hence the project's `lastReportedFlagUsage`). Flags of other projects than "
            "the token's, unknown and archived flags are ignored. 202."
        ),
        request=ClientMetricsSchemaSerializer,
        responses={
            202: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        app_name, counts = parse_client_metrics(request.data)
        client: ClientPrincipal = request.user
        record_client_metrics(
            environment=client.environment,
            app_name=app_name,
            counts=counts,
            projects=client.projects,
        )
        return Response(status=status.HTTP_202_ACCEPTED)
