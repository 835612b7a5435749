"""Who makes a change, as services and the audit log know them: a person (`User`, signed in or
acting through a personal token), an API token of its own (`TokenActor`), or the instance
itself (None: SAML sign-in, start-up tokens, management commands)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

from flagadmin.core.models import ApiToken, TokenType, User


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


# --- one name per actor in the Django admin ------------------------------------------------
# The API keeps Unleash's `createdBy` as it is; the admin shows every actor under one label, the
# one audit events record: a token's name for what a token did by itself, a person's email else
# username (also when acting through a personal token), Unleash's system user's name for the
# instance itself.

ADMIN_TOKEN_LABEL = "admin token"


def actor_label(user: User | None, token: ApiToken | None = None) -> str:
    """The admin's label for whoever `user` (a creator or an editor row) and `token` (the
    token it acted through, when known) name. The admin token's system user without its token
    (a flag's creator row) is "admin token": `recorded_actor_label` of the change's event says
    which one."""
    if token is not None and token.type != TokenType.PERSONAL:
        return token.name
    if user is None or user.pk == User.SYSTEM_USER_ID:
        return SYSTEM.name
    if user.pk == User.ADMIN_TOKEN_USER_ID:
        return ADMIN_TOKEN_LABEL
    return user.audit_name


def recorded_actor_label(event: object) -> str:
    """The admin's label for an audit event's actor: the name the event recorded, which
    `audit_identity` wrote under the rule of `actor_label` (no query)."""
    return getattr(event, "created_by", "") or SYSTEM.name
