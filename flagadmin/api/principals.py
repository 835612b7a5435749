"""Who is calling: one interface for users and API tokens.

Permission checks ask `principal.has_permission("CREATE_FEATURE", project_id=...)` whether the
caller is a signed-in user, a personal token (which acts as its user), or an admin token.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagadmin.core.models import ApiToken, User


@dataclass(eq=False)
class TokenPrincipal:
    """An admin or client API token that is not bound to a user."""

    token: ApiToken

    is_authenticated = True
    is_anonymous = False
    is_active = True
    pk = None
    id = None

    @property
    def is_admin_api_principal(self) -> bool:
        # Client tokens are valid credentials, but for the SDK APIs only: 403 here.
        return self.token.type == "admin"

    @property
    def audit_name(self) -> str:
        return self.token.name

    @property
    def audit_user_id(self) -> int:
        return User.ADMIN_TOKEN_USER_ID

    def has_permission(self, permission: str, project_id: str | None = None) -> bool:
        return self.is_admin_api_principal

    def __str__(self) -> str:
        return f"token {self.token.name}"


def audit_actor(principal: object) -> tuple[str, int | None, ApiToken | None]:
    """(name, user id, token) recorded on audit events for the caller."""
    if isinstance(principal, TokenPrincipal):
        return principal.audit_name, principal.audit_user_id, principal.token
    if isinstance(principal, User):
        token = getattr(principal, "_acting_token", None)
        return principal.audit_name, principal.pk, token
    return "unleash_system_user", User.SYSTEM_USER_ID, None


def acting_user_id(principal: object) -> int | None:
    """The user row recorded as creator of things: the user, or the admin token's system user."""
    if isinstance(principal, User):
        return principal.pk
    return User.ADMIN_TOKEN_USER_ID
