"""API-token authentication, first in the chain so that a call without credentials is a 401.

Both APIs find tokens through `flagadmin.core.tokens.find_token`; `TokenAuthentication` reads the
header, and each API's class decides which tokens it accepts and how it refuses the others."""

from __future__ import annotations

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from flagadmin.api.errors import AuthenticationRequired
from flagadmin.api.principals import TokenPrincipal
from flagadmin.core.models import TokenType
from flagadmin.core.tokens import find_token, record_use, token_from_header


class TokenAuthentication(BaseAuthentication):
    """The `Authorization` header's token, for the subclasses: None without the header (the
    next authenticator's turn), 401 when the header holds no token."""

    def token_in(self, request: Request) -> str | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return None
        raw = token_from_header(header)
        if not raw:
            raise AuthenticationRequired()
        return raw

    def authenticate_header(self, request: Request) -> str:
        return 'ApiKey realm="api", header="Authorization"'


class ApiTokenAuthentication(TokenAuthentication):
    """Reads the `Authorization` header. Unknown, wrong, expired and revoked tokens all get the
    same 401; a request without the header is left to the next authenticator (the session).
    Client tokens pass here and are refused by the permissions (403)."""

    def authenticate(self, request: Request):
        raw = self.token_in(request)
        if raw is None:
            return None
        found = find_token(raw, with_user=True)
        if found is None:
            raise AuthenticationRequired()
        token = found.token
        record_use(token)
        if token.type == TokenType.PERSONAL:
            user = token.user
            if user is None or not user.is_active:
                raise AuthenticationRequired()
            user._acting_token = token
            return user, token
        return TokenPrincipal(token), token
