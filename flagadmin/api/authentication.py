"""API-token authentication, first in the chain so that a call without credentials is a 401."""

from __future__ import annotations

import hmac
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from flagadmin.api.errors import AuthenticationRequired
from flagadmin.api.principals import TokenPrincipal
from flagadmin.models import ApiToken, TokenType


def token_from_header(value: str) -> str:
    """The whole header is the token; a leading `Bearer ` (any case) is stripped (as Unleash)."""
    value = value.strip()
    if value[:7].lower() == "bearer ":
        value = value[7:].strip()
    return value


class ApiTokenAuthentication(BaseAuthentication):
    """Reads the `Authorization` header. Unknown, wrong, expired and revoked tokens all get the
    same 401; a request without the header is left to the next authenticator (the session)."""

    def authenticate(self, request: Request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return None
        raw = token_from_header(header)
        if not raw:
            raise AuthenticationRequired()
        digest = ApiToken.digest_of(raw)
        tokens = ApiToken.objects.filter(digest=digest).order_by()
        if raw.startswith("user:"):  # personal tokens act as their user: load it alongside
            tokens = tokens.select_related("user", "user__root_role")
        # No joins and no ORDER BY for admin and client tokens: this runs on every request, and
        # compiling the joined query cost twice the CPU of the rest of the lookup.
        token = next(iter(tokens[:1]), None)
        # The lookup is by digest, so the comparison below never sees a secret; it is kept
        # constant-time anyway so that nothing about a stored digest leaks through timing.
        if token is None or not hmac.compare_digest(token.digest, digest) or not token.is_usable:
            raise AuthenticationRequired()
        self._touch(token)
        if token.type == TokenType.PERSONAL:
            user = token.user
            if user is None or not user.is_active:
                raise AuthenticationRequired()
            user._acting_token = token
            return user, token
        return TokenPrincipal(token), token

    def authenticate_header(self, request: Request) -> str:
        return 'ApiKey realm="api", header="Authorization"'

    @staticmethod
    def _touch(token: ApiToken) -> None:
        """Record use at most every TOKEN_LAST_USED_RESOLUTION seconds, never on every request."""
        now = timezone.now()
        resolution = timedelta(seconds=settings.TOKEN_LAST_USED_RESOLUTION)
        if token.last_used_at is None or now - token.last_used_at >= resolution:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
