"""API tokens: issuing them in Unleash's formats, creating the bootstrap tokens, and finding the
token a request presents (both the admin and the client API authenticate through `find_token`).

Formats: admin `*:*.<secret>`, client and frontend `<project>:<environment>.<secret>`
(`[]:<environment>.…` for several projects), personal `user:<secret>`. Only the SHA-256 digest
is stored.
"""

from __future__ import annotations

import functools
import hmac
import logging
import secrets
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField
from django.utils import timezone

from flagadmin.core.db import prepared_cursor
from flagadmin.core.models import ApiToken, AuditEvent, TokenType, User
from flagadmin.core.sql import column, table

logger = logging.getLogger(__name__)


# The token types bound to projects and one environment.
SCOPED_TYPES = (TokenType.CLIENT, TokenType.FRONTEND)


def new_secret() -> str:
    return secrets.token_hex(32)


def token_prefix(token_type: str, projects: list[str] | None = None, environment: str = "*") -> str:
    if token_type == TokenType.PERSONAL:
        return "user"
    if token_type == TokenType.ADMIN:
        return "*:*"
    projects = projects or ["*"]
    project = projects[0] if len(projects) == 1 else "[]"
    return f"{project}:{environment}"


def assign_secret(token: ApiToken, secret: str | None = None) -> str:
    """Give an unsaved token its prefix and the digest of a new secret; return the plaintext,
    which the caller shows once and never stores. Used by `issue_token` and the Django admin."""
    projects = [p for p in token.project.split(",") if p] or ["*"]
    token.prefix = token_prefix(token.type, projects, token.environment)
    if token.type == TokenType.PERSONAL:
        plaintext = f"user:{secret or new_secret()}"
    else:
        plaintext = f"{token.prefix}.{secret or new_secret()}"
    token.digest = ApiToken.digest_of(plaintext)
    return plaintext


def issue_token(
    *,
    name: str,
    token_type: str,
    projects: list[str] | None = None,
    environment: str = "*",
    user: User | None = None,
    expires_at: datetime | None = None,
    created_by: str = "",
    secret: str | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its plaintext, which is never stored nor shown again."""
    token = ApiToken(
        name=name,
        type=token_type,
        user=user,
        project=",".join(projects or ["*"]),
        environment=environment if token_type in SCOPED_TYPES else "*",
        expires_at=expires_at,
        created_by=created_by,
    )
    plaintext = assign_secret(token, secret)
    token.save()
    return token, plaintext


def parse_bootstrap_token(raw: str) -> tuple[str, list[str], str]:
    """(type, projects, environment) of a token written in Unleash's format. The secret is the
    part after the last dot: project ids and environment names may contain dots, secrets not."""
    prefix, dot, secret = raw.rpartition(".")
    if not dot or not secret or ":" not in prefix:
        raise ValueError("expected <project>:<environment>.<secret>")
    project, _, environment = prefix.partition(":")
    if project == "*" and environment == "*":
        return TokenType.ADMIN, ["*"], "*"
    return TokenType.CLIENT, [project], environment


def ensure_bootstrap_tokens(admin_tokens: list[str], client_tokens: list[str]) -> int:
    """Create the INIT_*_API_TOKENS that do not exist yet. Idempotent; returns how many it made."""
    created = 0
    for raw, expected in [(t, TokenType.ADMIN) for t in admin_tokens] + [
        (t, TokenType.CLIENT) for t in client_tokens
    ]:
        try:
            token_type, projects, environment = parse_bootstrap_token(raw)
        except ValueError as exc:
            logger.error(
                "ignoring a bootstrap token in INIT_%s_API_TOKENS: %s", expected.upper(), exc
            )
            continue
        if token_type != expected:
            logger.error(
                "ignoring a bootstrap token: INIT_%s_API_TOKENS holds a %s token",
                expected.upper(),
                token_type,
            )
            continue
        digest = ApiToken.digest_of(raw)
        if ApiToken.objects.filter(digest=digest).exists():
            continue
        try:
            with transaction.atomic():
                ApiToken.objects.create(
                    name=f"init-{token_type}-{digest[:8]}",
                    type=token_type,
                    prefix=raw.rpartition(".")[0],
                    digest=digest,
                    project=",".join(projects),
                    environment=environment,
                    created_by="init-api-tokens",
                )
                created += 1
        except IntegrityError:  # another worker created it at the same moment
            continue
    return created


# --- Finding the token a request presents -------------------------------------------------


def token_from_header(value: str) -> str:
    """The whole header is the token; a leading `Bearer ` (any case) is stripped (as Unleash)."""
    value = value.strip()
    if value[:7].lower() == "bearer ":
        value = value[7:].strip()
    return value


class FoundToken(NamedTuple):
    token: ApiToken
    # The newest audit event's id (0 before any) when asked for, else None: every change to a
    # flag records an event, so it moves whenever what SDKs receive may have changed.
    revision: int | None


def find_token(
    raw: str, *, with_user: bool = False, with_revision: bool = False
) -> FoundToken | None:
    """The token whose plaintext is `raw`, or None when it is unknown, revoked or expired (one
    answer for all three). Runs on every request and remembers nothing, so a token revoked,
    deleted or expired is refused from the very next request.

    `with_user`: a personal token comes with its user and the user's root role (the admin API
    acts as that user). `with_revision`: the revision is read in the same statement (the client
    API keys its cached flag list by it). Either way it is one statement."""
    if with_user and with_revision:
        raise TypeError("find_token reads a personal token's user or the revision, not both")
    digest = ApiToken.digest_of(raw)
    revision = None
    if with_user and raw.startswith("user:"):
        tokens = ApiToken.objects.filter(digest=digest).order_by()
        token = next(iter(tokens.select_related("user", "user__root_role")[:1]), None)
    else:
        # Admin and client tokens, on every request of the admin and client APIs: one
        # statement written once per process, rather than a query the ORM compiles each time
        # (that was most of the lookup's cost); on the connection itself, not through the
        # `connection` proxy, which pays a thread-local lookup for each attribute read; and
        # prepared once per connection on PostgreSQL.
        with prepared_cursor(connections[DEFAULT_DB_ALIAS]) as cursor:
            cursor.execute(_token_statement(with_revision), [digest])
            row = cursor.fetchone()
        if row is None:
            return None
        token = _token_from_row(row, cursor.db)
        if with_revision:
            revision = row[-1] or 0
    # The lookup is by digest, so the comparison below never sees a secret; it is kept
    # constant-time anyway so that nothing about a stored digest leaks through timing.
    if token is None or not hmac.compare_digest(token.digest, digest) or not token.is_usable:
        return None
    return FoundToken(token, revision)


def current_revision() -> int:
    """The newest audit event's id now (0 before any), as `find_token(with_revision=True)`
    reads it, for a caller whose token lookup is reused but must not answer from an older
    state than the database's."""
    with prepared_cursor(connections[DEFAULT_DB_ALIAS]) as cursor:
        cursor.execute(_revision_statement())
        return cursor.fetchone()[0] or 0


def record_use(token: ApiToken) -> None:
    """Record the token's use at most every TOKEN_LAST_USED_RESOLUTION seconds, never on every
    request (it is a write)."""
    now = timezone.now()
    resolution = timedelta(seconds=settings.TOKEN_LAST_USED_RESOLUTION)
    if token.last_used_at is None or now - token.last_used_at >= resolution:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


# The columns that deciding about a token, acting as it and naming it (`str()`) read. The
# others (`created_at`, `created_by`) are left deferred: nothing reading a request's token uses
# them, and a timestamp is the dearest column to load.
_TOKEN_FIELDS = (
    "id",
    "name",
    "type",
    "prefix",
    "digest",
    "user_id",
    "project",
    "environment",
    "expires_at",
    "revoked_at",
    "last_used_at",
)
_DATETIME_POSITIONS = tuple(
    index
    for index, name in enumerate(_TOKEN_FIELDS)
    if isinstance(ApiToken._meta.get_field(name), DateTimeField)
)


@functools.cache
def _revision_statement() -> str:
    return f"SELECT MAX({column(AuditEvent, 'id')}) FROM {table(AuditEvent)}"


@functools.cache
def _token_statement(with_revision: bool) -> str:
    columns = ", ".join(column(ApiToken, name) for name in _TOKEN_FIELDS)
    if with_revision:
        columns += f", ({_revision_statement()})"
    return f"SELECT {columns} FROM {table(ApiToken)} WHERE {column(ApiToken, 'digest')} = %s"


def _token_from_row(row: tuple, db: BaseDatabaseWrapper) -> ApiToken:
    values = row[: len(_TOKEN_FIELDS)]
    if db.vendor == "sqlite":  # naive values (the ORM's converters would add UTC)
        values = list(values)
        for index in _DATETIME_POSITIONS:
            values[index] = _aware(values[index])
    return ApiToken.from_db(db.alias, _TOKEN_FIELDS, values)


def _aware(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)
