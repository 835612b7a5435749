"""Unleash Edge's upstream endpoints: `POST /edge/validate` (which of these tokens are valid)
and `POST /api/client/metrics/bulk` (the usage and registrations Edge collected from its SDKs).
With these and the client API, an Edge instance uses flagadmin as its upstream
(docs/scale-out.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request
from rest_framework.response import Response

from client_api.authentication import ClientPrincipal
from client_api.edge_serializers import (
    BulkMetricsSchemaSerializer,
    EdgeTokenSchemaSerializer,
    TokenStringListSchemaSerializer,
    ValidatedEdgeTokensSchemaSerializer,
    parse_bulk_metrics,
)
from client_api.views import ClientApiView
from features.metrics_services import (
    record_client_metrics,
    record_seen_tokens,
    register_client_instances,
)
from flagadmin.api.errors import NoAccessError
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.sdk_tokens import WRONG_TOKEN_TYPE
from flagadmin.core.models import ApiToken, TokenType
from flagadmin.core.tokens import find_token, token_from_header

# The types of token the client API and the Frontend API take: on any other path, Unleash
# refuses them with 403, /edge/validate included.
SDK_TOKEN_TYPES = frozenset({TokenType.CLIENT.value, TokenType.FRONTEND.value})


class ClientBulkMetricsView(ClientApiView):
    @extend_schema(
        operation_id="clientBulkMetrics",
        tags=["Unleash Edge"],
        summary="Send metrics in bulk",
        description=(
            "What Unleash Edge sends for the SDKs connected to it, one batch per environment "
            "with a client token of that environment. `applications`: each SDK instance is "
            "remembered as `POST /api/client/register` remembers it (in the environment it "
            "names). `metrics`: the counts of the token's environment are added to the flags' "
            "hourly counts as `POST /api/client/metrics` adds them (same figures, same "
            "`lastSeenAt`; flags outside the token's projects, unknown and archived flags "
            "ignored); entries of other environments, and entries without an `appName`, are "
            "skipped, as Unleash skips them. `seenTokens`: each token's last use is recorded. "
            "`impactMetrics` are accepted and ignored. Client tokens only. 202."
        ),
        request=BulkMetricsSchemaSerializer,
        responses={
            202: OpenApiResponse(description="This response has no body."),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        client: ClientPrincipal = request.user
        report = parse_bulk_metrics(request.data, environment=client.environment)
        register_client_instances(report.applications)
        for app_name, counts in sorted(report.counts.items()):
            record_client_metrics(
                environment=client.environment,
                app_name=app_name,
                counts=counts,
                projects=client.projects,
            )
        record_seen_tokens(report.seen_tokens)
        return Response(status=status.HTTP_202_ACCEPTED)


class NoSdkToken(BaseAuthentication):
    """`/edge/validate` needs no credentials, as on Unleash: a request without any, or with an
    admin or personal token, or with one that is unknown, is served alike; a client or
    frontend token in `Authorization` is refused with 403, as Unleash refuses it on every path
    but its own API's."""

    def authenticate(self, request: Request):
        header = request.META.get("HTTP_AUTHORIZATION")
        raw = token_from_header(header) if header else ""
        found = find_token(raw) if raw else None
        if found is not None and found.token.type in SDK_TOKEN_TYPES:
            raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
        return None


class EdgeValidateView(ClientApiView):
    authentication_classes = [NoSdkToken]
    permission_classes: list = []

    @extend_schema(
        operation_id="getValidTokens",
        tags=["Unleash Edge"],
        summary="Check which tokens are valid",
        description=(
            "Edge calls this, without credentials, for each token an SDK presents to it. The "
            "answer lists the tokens sent that are valid (not revoked, not expired), in the "
            "order sent, each with its type, projects and environment; the others are left "
            "out. Personal access tokens are never listed (they are no API tokens). A client "
            "or frontend token in `Authorization` is refused with 403, as on Unleash; any "
            "other credentials are ignored, so 401 is never answered."
        ),
        auth=[{"apiKey": []}, {}],
        request=TokenStringListSchemaSerializer,
        responses={
            200: OpenApiResponse(
                ValidatedEdgeTokensSchemaSerializer, description="validatedEdgeTokensSchema"
            ),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        body = TokenStringListSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        tokens, sent = valid_tokens(body.validated_data["tokens"])
        return Response({"tokens": serialize(tokens, EdgeTokenSchemaSerializer, sent=sent)})


def valid_tokens(secrets: list[str]) -> tuple[list[ApiToken], dict[str, str]]:
    """The API tokens among `secrets` that are usable, in the order given (repeats repeated,
    as Unleash does), and the secret sent for each, by digest. One query."""
    digests = {secret: ApiToken.digest_of(secret) for secret in secrets if secret}
    found = {
        token.digest: token
        for token in ApiToken.objects.filter(digest__in=set(digests.values()))
        .exclude(type=TokenType.PERSONAL)
        .only("type", "digest", "project", "environment", "expires_at", "revoked_at")
    }
    tokens = []
    sent = {}
    for secret in secrets:
        token = found.get(digests.get(secret, ""))
        if token is None or not token.is_usable:
            continue
        tokens.append(token)
        sent[token.digest] = secret
    return tokens, sent
