"""Who is calling: one interface for users and API tokens.

Permission checks ask `principal.has_permission("CREATE_FEATURE", project_id=...)` whether the
caller is a signed-in user, a personal token (which acts as its user), or an admin token.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagadmin.core.models import ApiToken


@dataclass(eq=False)
class TokenPrincipal:
    """An admin or client API token that is not bound to a user. As an actor of changes it is
    a `flagadmin.core.actors.TokenActor`: recorded under the token's name."""

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

    def has_permission(self, permission: str, project_id: str | None = None) -> bool:
        return self.is_admin_api_principal

    def __str__(self) -> str:
        return f"token {self.token.name}"
