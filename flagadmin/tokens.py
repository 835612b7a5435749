"""Issuing API tokens in Unleash's formats, and creating the bootstrap tokens.

Formats: admin `*:*.<secret>`, client `<project>:<environment>.<secret>` (`[]:<environment>.…`
for several projects), personal `user:<secret>`. Only the SHA-256 digest is stored.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime

from django.db import IntegrityError, transaction

from flagadmin.models import ApiToken, TokenType, User

logger = logging.getLogger(__name__)


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
        environment=environment if token_type == TokenType.CLIENT else "*",
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
