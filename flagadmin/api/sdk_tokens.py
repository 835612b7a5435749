"""The tokens SDKs and browsers present (client tokens on /api/client, frontend tokens on
/api/frontend): looked up with the revision in one statement, then reused by the worker.

An SDK polls every few seconds and a browser asks on every page view, each with the same token:
a worker that looked a token up less than `CLIENT_API_REUSE_SECONDS` ago (and which has not
expired since) answers without a query, so a revocation or a flag change reaches them that much
later at most. Each API has its own principal class, so that a token of one kind is never taken
for the other's (their permissions check the class).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from django.conf import settings
from django.utils import timezone

from flagadmin.api.errors import NoAccessError
from flagadmin.core.caches import BoundedCache
from flagadmin.core.models import ApiToken
from flagadmin.core.tokens import find_token, record_use

# A token without an environment (`*`) reads this one, as Unleash's default.
DEFAULT_ENVIRONMENT = "development"
# Unleash's words for a token of another kind.
WRONG_TOKEN_TYPE = "invalid token: expected a different token type for this endpoint"
MAX_REMEMBERED_TOKENS = 10_000


@dataclass(eq=False)
class SdkPrincipal:
    """An SDK or an app, by its token: which projects and which environment it reads, and the
    revision (newest audit event id) read with the token."""

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


P = TypeVar("P", bound=SdkPrincipal)


class SdkTokens(Generic[P]):
    """The tokens of one type (`token_type`) and their principals (`principal_class`), each
    remembered by this worker after its lookup (see the module's doc)."""

    def __init__(self, name: str, *, token_type: str, principal_class: type[P]) -> None:
        self.token_type = token_type
        self.principal_class = principal_class
        # By digest: (principal, expiry).
        self._recent: BoundedCache[str, tuple[P, datetime | None]] = BoundedCache(
            name,
            max_entries=MAX_REMEMBERED_TOKENS,
            max_age=lambda: settings.CLIENT_API_REUSE_SECONDS,
        )

    def remembered(self, raw: str) -> P | None:
        """The principal of `raw` if this worker looked it up lately and it has not expired
        since, without a query; None otherwise."""
        recent = self._recent.get(ApiToken.digest_of(raw))
        if recent is None:
            return None
        principal, expires_at = recent
        if expires_at is not None and expires_at <= timezone.now():
            return None
        return principal

    def principal(self, raw: str) -> P | None:
        """The principal of `raw`, remembered or looked up (one query); None for an unknown,
        expired or revoked token; 403 (`NoAccessError`) for a token of another type."""
        principal = self.remembered(raw)
        if principal is not None:
            return principal
        found = find_token(raw, with_revision=True)
        if found is None:
            return None
        token = found.token
        if token.type != self.token_type:
            raise NoAccessError(None, message=WRONG_TOKEN_TYPE)
        record_use(token)
        environment = token.environment
        principal = self.principal_class(
            token_id=token.pk,
            projects=tuple(sorted(p for p in token.project.split(",") if p)) or ("*",),
            environment=DEFAULT_ENVIRONMENT if environment in ("", "*") else environment,
            revision=found.revision or 0,
        )
        self._recent.put(ApiToken.digest_of(raw), (principal, token.expires_at))
        return principal

    def forget(self) -> None:
        """Forget every token looked up (the next request of each reads the table)."""
        self._recent.clear()
