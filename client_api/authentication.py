"""Client-token authentication for /api/client: one query per lookup, which also reads the
revision the kept flag list is keyed by; a worker reuses a lookup for a while
(`flagadmin.api.sdk_tokens`)."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from flagadmin.api.authentication import TokenAuthentication
from flagadmin.api.errors import AuthenticationRequired
from flagadmin.api.sdk_tokens import SdkPrincipal, SdkTokens
from flagadmin.core.models import TokenType


class ClientPrincipal(SdkPrincipal):
    """An SDK, by its client token: which projects and which environment it reads."""


client_tokens: SdkTokens[ClientPrincipal] = SdkTokens(
    "client token lookups", token_type=TokenType.CLIENT, principal_class=ClientPrincipal
)
remembered_client = client_tokens.remembered
forget_tokens = client_tokens.forget


class ClientTokenAuthentication(TokenAuthentication):
    """Reads the `Authorization` header (the whole value is the token). Unknown, expired and
    revoked tokens get 401; admin and personal tokens get 403, as Unleash answers them here."""

    def authenticate(self, request: Request):
        raw = self.token_in(request)
        if raw is None:
            return None
        principal = client_tokens.principal(raw)
        if principal is None:
            raise AuthenticationRequired()
        return principal, None


class IsClient(BasePermission):
    """Only SDKs (client tokens) past authentication; no credentials at all is 401."""

    def has_permission(self, request: Request, view) -> bool:
        if not isinstance(request.user, ClientPrincipal):
            raise AuthenticationRequired()
        return True
