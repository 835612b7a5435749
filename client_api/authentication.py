"""Client-token authentication for /api/client: one query per request, which also reads the
revision the cached flag list is keyed by."""

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
from flagadmin.core.tokens import find_token, record_use

# A client token without an environment (`*`) reads this one, as Unleash's default.
DEFAULT_ENVIRONMENT = "development"

WRONG_TOKEN_TYPE = "invalid token: expected a different token type for this endpoint"


# Client tokens looked up lately, by digest: (when, principal with the revision, expiry). SDKs
# poll every few seconds with the same token; within CLIENT_API_REUSE_SECONDS a worker answers
# them without a query, so a revocation or a flag change reaches SDKs that much later at most.
_recent: dict[str, tuple[float, ClientPrincipal, datetime | None]] = {}
MAX_REMEMBERED_TOKENS = 10_000


def forget_tokens() -> None:
    """Forget the client tokens looked up lately (the next request of each reads the table)."""
    _recent.clear()


@dataclass(eq=False)
class ClientPrincipal:
    """An SDK, by its client token: which projects and which environment it reads."""

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


class ClientTokenAuthentication(TokenAuthentication):
    """Reads the `Authorization` header (the whole value is the token). Unknown, expired and
    revoked tokens get 401; admin and personal tokens get 403, as Unleash answers them here."""

    def authenticate(self, request: Request):
        raw = self.token_in(request)
        if raw is None:
            return None
        principal = remembered_client(raw)
        if principal is not None:
            return principal, None
        digest = ApiToken.digest_of(raw)
        found = find_token(raw, with_revision=True)
        if found is None:
            raise AuthenticationRequired()
        token = found.token
        if token.type != TokenType.CLIENT:
            raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
        record_use(token)
        projects = tuple(sorted(p for p in token.project.split(",") if p)) or ("*",)
        environment = token.environment
        principal = ClientPrincipal(
            token_id=token.pk,
            projects=projects,
            environment=DEFAULT_ENVIRONMENT if environment in ("", "*") else environment,
            revision=found.revision,
        )
        if settings.CLIENT_API_REUSE_SECONDS > 0:
            if len(_recent) >= MAX_REMEMBERED_TOKENS:
                _recent.clear()
            _recent[digest] = (time.monotonic(), principal, token.expires_at)
        return principal, None


def remembered_client(raw: str) -> ClientPrincipal | None:
    """The SDK whose token this worker looked up less than CLIENT_API_REUSE_SECONDS ago (and
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


class IsClient(BasePermission):
    """Only SDKs (client tokens) past authentication; no credentials at all is 401."""

    def has_permission(self, request: Request, view) -> bool:
        if not isinstance(request.user, ClientPrincipal):
            raise AuthenticationRequired()
        return True
