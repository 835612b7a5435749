"""Frontend-token authentication for /api/frontend, answered as Unleash 8.2's
`frontend-token-middleware.ts` answers: no token, an unknown, expired or revoked one: 401;
any other kind of token (client, admin, personal): 403.

A browser asks on every page view, so a worker reuses a token's lookup, with the revision read
in the same statement, for up to `CLIENT_API_REUSE_SECONDS`, as the client API does: a
revocation or a flag change reaches the Frontend API that much later at most.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from flagadmin.api.authentication import TokenAuthentication
from flagadmin.api.errors import AuthenticationRequired, NoAccessError
from flagadmin.core.models import ApiToken, TokenType
from flagadmin.core.tokens import find_token, record_use, token_from_header

# Unleash's own words for the two refusals.
NO_TOKEN = (
    "This endpoint requires an API token. Please add an authorization header to your request "
    "with a valid token"
)
WRONG_TOKEN_TYPE = "invalid token: expected a different token type for this endpoint"
# A token without an environment (`*`) reads this one, as Unleash's default.
DEFAULT_ENVIRONMENT = "development"
MAX_REMEMBERED_TOKENS = 10_000


@dataclass(eq=False)
class FrontendPrincipal:
    """A browser or mobile app, by its frontend token: which projects and which environment it
    reads, and the revision (newest audit event id) read with the token."""

    token_id: int
    projects: tuple[str, ...]
    environment: str
    revision: int

    is_authenticated = True
    is_anonymous = False
    is_admin_api_principal = False
    pk = None

    @property
    def all_projects(self) -> bool:
        return "*" in self.projects


# Frontend tokens looked up lately, by digest: (when, principal, expiry).
_recent: dict[str, tuple[float, FrontendPrincipal, datetime | None]] = {}


def forget_tokens() -> None:
    """Forget the frontend tokens looked up lately (the next request of each reads the table)."""
    _recent.clear()


def remembered_frontend(raw: str) -> FrontendPrincipal | None:
    """The app whose token this worker looked up less than CLIENT_API_REUSE_SECONDS ago (and
    which has not expired since), without a query; None otherwise."""
    recent = _recent.get(ApiToken.digest_of(raw))
    if recent is None:
        return None
    looked_up_at, principal, expires_at = recent
    if time.monotonic() - looked_up_at >= settings.CLIENT_API_REUSE_SECONDS:
        return None
    if expires_at is not None and expires_at <= timezone.now():
        return None
    return principal


def frontend_principal(header: str | None) -> FrontendPrincipal:
    """The app presenting the `Authorization` header `header`, or the 401/403 Unleash answers."""
    raw = token_from_header(header) if header is not None else ""
    if not raw:
        raise AuthenticationRequired(NO_TOKEN)
    if raw.startswith("user:"):
        # A personal access token is refused for its kind before any lookup, as on Unleash.
        raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
    principal = remembered_frontend(raw)
    if principal is not None:
        return principal
    found = find_token(raw, with_revision=True)
    if found is None:
        raise AuthenticationRequired(NO_TOKEN)
    token = found.token
    if token.type != TokenType.FRONTEND:
        raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
    record_use(token)
    environment = token.environment
    principal = FrontendPrincipal(
        token_id=token.pk,
        projects=tuple(sorted(p for p in token.project.split(",") if p)) or ("*",),
        environment=DEFAULT_ENVIRONMENT if environment in ("", "*") else environment,
        revision=found.revision or 0,
    )
    if settings.CLIENT_API_REUSE_SECONDS > 0:
        if len(_recent) >= MAX_REMEMBERED_TOKENS:
            _recent.clear()
        _recent[ApiToken.digest_of(raw)] = (time.monotonic(), principal, token.expires_at)
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
