"""Frontend-token authentication for /api/frontend, answered as Unleash 8.2's
`frontend-token-middleware.ts` answers: no token, an unknown, expired or revoked one: 401;
any other kind of token (client, admin, personal): 403.

A browser asks on every page view, so a worker reuses a token's lookup, with the revision read
in the same statement, for up to `CLIENT_API_REUSE_SECONDS`, as the client API does: a
revocation or a flag change reaches the Frontend API that much later at most.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from flagadmin.api.authentication import TokenAuthentication
from flagadmin.api.errors import AuthenticationRequired, NoAccessError
from flagadmin.api.sdk_tokens import WRONG_TOKEN_TYPE, SdkPrincipal, SdkTokens
from flagadmin.core.models import TokenType
from flagadmin.core.tokens import token_from_header

# Unleash's own words for a request without a usable token.
NO_TOKEN = (
    "This endpoint requires an API token. Please add an authorization header to your request "
    "with a valid token"
)


class FrontendPrincipal(SdkPrincipal):
    """A browser or mobile app, by its frontend token: which projects and which environment it
    reads, and the revision (newest audit event id) read with the token. Not a
    `ClientPrincipal`: the client API refuses it."""


frontend_tokens: SdkTokens[FrontendPrincipal] = SdkTokens(
    "frontend token lookups", token_type=TokenType.FRONTEND, principal_class=FrontendPrincipal
)
remembered_frontend = frontend_tokens.remembered
forget_tokens = frontend_tokens.forget


def frontend_principal(header: str | None) -> FrontendPrincipal:
    """The app presenting the `Authorization` header `header`, or the 401/403 Unleash answers."""
    raw = token_from_header(header) if header is not None else ""
    if not raw:
        raise AuthenticationRequired(NO_TOKEN)
    if raw.startswith("user:"):
        # A personal access token is refused for its kind before any lookup, as on Unleash.
        raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
    principal = frontend_tokens.principal(raw)
    if principal is None:
        raise AuthenticationRequired(NO_TOKEN)
    return principal


class FrontendTokenAuthentication(TokenAuthentication):
    """The `Authorization` header's frontend token. Every request needs one, so a request
    without the header is refused here too (401), not left to another authenticator."""

    def authenticate(self, request: Request):
        return frontend_principal(request.META.get("HTTP_AUTHORIZATION")), None


class IsFrontend(BasePermission):
    def has_permission(self, request: Request, view) -> bool:
        if not isinstance(request.user, FrontendPrincipal):
            raise AuthenticationRequired(NO_TOKEN)
        return True
