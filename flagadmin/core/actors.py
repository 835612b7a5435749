"""Who makes a change, as services and the audit log know them: a person (`User`, signed in or
acting through a personal token), an API token of its own (`TokenActor`), or the instance
itself (None: SAML sign-in, start-up tokens, management commands)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

from flagadmin.core.models import ApiToken, User


@runtime_checkable
class TokenActor(Protocol):
    """An API token that acts as itself, not as a user (an admin token); the API layer's
    `TokenPrincipal` is one. Its changes are recorded under the token's name and made by the
    admin token's system user."""

    @property
    def token(self) -> ApiToken: ...

    @property
    def audit_name(self) -> str: ...


Actor: TypeAlias = User | TokenActor | None


@dataclass(frozen=True)
class AuditIdentity:
    """What an audit event records about its actor."""

    name: str
    user_id: int | None
    token: ApiToken | None


SYSTEM = AuditIdentity("unleash_system_user", User.SYSTEM_USER_ID, None)


def audit_identity(actor: Actor) -> AuditIdentity:
    if isinstance(actor, User):
        # A personal token's user carries the token it came with (`flagadmin.api`'s auth).
        return AuditIdentity(actor.audit_name, actor.pk, getattr(actor, "_acting_token", None))
    if isinstance(actor, TokenActor):
        return AuditIdentity(actor.audit_name, User.ADMIN_TOKEN_USER_ID, actor.token)
    return SYSTEM


def acting_user_id(actor: Actor) -> int:
    """The user row recorded as creator of things: the person, else the admin token's system
    user (also for the instance itself, as Unleash records it)."""
    if isinstance(actor, User):
        return actor.pk
    return User.ADMIN_TOKEN_USER_ID
