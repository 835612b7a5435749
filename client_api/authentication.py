"""Client-token authentication for /api/client: one query per request, which also reads the
revision the cached flag list is keyed by."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from flagadmin.api.authentication import token_from_header
from flagadmin.api.errors import AuthenticationRequired, NoAccessError
from flagadmin.models import ApiToken, AuditEvent, TokenType
from flagadmin.sql import column, table

# A client token without an environment (`*`) reads this one, as Unleash's default.
DEFAULT_ENVIRONMENT = "development"

WRONG_TOKEN_TYPE = "invalid token: expected a different token type for this endpoint"

TOKEN_FIELDS = ("id", "type", "project", "environment", "expires_at", "revoked_at", "last_used_at")
# The token and, in the same round trip, the newest audit event's id: every change to a flag
# records an event, so that id moves whenever what SDKs receive may have changed.
TOKEN_AND_REVISION_SQL = (
    "SELECT "
    + ", ".join(column(ApiToken, f) for f in TOKEN_FIELDS)
    + f", (SELECT MAX({column(AuditEvent, 'id')}) FROM {table(AuditEvent)})"
    + f" FROM {table(ApiToken)} WHERE {column(ApiToken, 'digest')} = %s"
)


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


class ClientTokenAuthentication(BaseAuthentication):
    """Reads the `Authorization` header (the whole value is the token). Unknown, expired and
    revoked tokens get 401; admin and personal tokens get 403, as Unleash answers them here."""

    def authenticate(self, request: Request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return None
        raw = token_from_header(header)
        if not raw:
            raise AuthenticationRequired()
        digest = ApiToken.digest_of(raw)
        recent = _recent.get(digest)
        if recent is not None:
            looked_up_at, principal, expires_at = recent
            fresh = time.monotonic() - looked_up_at < settings.CLIENT_API_REUSE_SECONDS
            if fresh and (expires_at is None or expires_at > timezone.now()):
                return principal, None
        with connection.cursor() as cursor:
            cursor.execute(TOKEN_AND_REVISION_SQL, [digest])
            row = cursor.fetchone()
        if row is None:
            raise AuthenticationRequired()
        token_id, token_type, project, environment, expires_at, revoked_at, last_used = row[:7]
        if connection.vendor == "sqlite":  # SQLite returns naive values; they are UTC
            expires_at, last_used = _aware(expires_at), _aware(last_used)
        now = timezone.now()
        if revoked_at is not None or (expires_at is not None and expires_at <= now):
            raise AuthenticationRequired()
        if token_type != TokenType.CLIENT:
            raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
        resolution = timedelta(seconds=settings.TOKEN_LAST_USED_RESOLUTION)
        if last_used is None or now - last_used >= resolution:
            ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
        projects = tuple(sorted(p for p in project.split(",") if p)) or ("*",)
        principal = ClientPrincipal(
            token_id=token_id,
            projects=projects,
            environment=DEFAULT_ENVIRONMENT if environment in ("", "*") else environment,
            revision=row[7] or 0,
        )
        if settings.CLIENT_API_REUSE_SECONDS > 0:
            if len(_recent) >= MAX_REMEMBERED_TOKENS:
                _recent.clear()
            _recent[digest] = (time.monotonic(), principal, expires_at)
        return principal, None

    def authenticate_header(self, request: Request) -> str:
        return 'ApiKey realm="api", header="Authorization"'


def _aware(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class IsClient(BasePermission):
    """Only SDKs (client tokens) past authentication; no credentials at all is 401."""

    def has_permission(self, request: Request, view) -> bool:
        if not isinstance(request.user, ClientPrincipal):
            raise AuthenticationRequired()
        return True
