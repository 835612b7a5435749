"""Sign-in throttling with django-axes, for the Django admin's password form: after
SIGNIN_FAILURE_LIMIT failed passwords for one account from one address, further attempts of
that account from that address are refused for SIGNIN_LOCKOUT_MINUTES, before any password is
hashed. The account and the address together (SIGNIN_LOCKOUT_BY), so one person behind an
office's NAT locks out neither the others there nor the account's owner elsewhere.

Axes runs first among the authentication backends (`SignInThrottleBackend`), so a locked-out
attempt never reaches ModelBackend's password hasher. Axes counts password attempts only: a
SAML response cannot be guessed, and the SAML callback has its own rate limit, per address,
that locks nobody out (`auth_saml.rate_limit`). The user's `login_attempts` (Unleash's
`loginAttempts`) counts failed sign-ins of both kinds and is reset by a successful one.
"""

from __future__ import annotations

import math
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.helpers import get_client_ip_address, get_cool_off
from django.conf import settings
from django.db.models import F, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from flagadmin.core.models import User

LOCKED_OUT_TEMPLATE = "flagadmin/signin_locked_out.html"


class SignInThrottleBackend(AxesStandaloneBackend):
    """Axes' check, first in AUTHENTICATION_BACKENDS. A call without a request (code, not a
    client: management commands, tests) has no address to count and is not throttled."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        try:
            return super().authenticate(request, *args, **kwargs)
        except AxesBackendPermissionDenied:
            # Marks the attempt as refused before any password check (axes' own flag is also
            # set by the failure that starts a lockout, which does count).
            request.signin_refused_by_lockout = True
            raise


def not_a_password_attempt(request: HttpRequest, credentials: dict | None) -> bool:
    """AXES_WHITELIST_CALLABLE: an attempt without a password (a SAML response, whose
    `authenticate` carries the verified `session_info`) is neither refused by the lockout nor
    counted towards one. Without credentials (axes asking about a request alone) it is
    counted, as axes would."""
    return credentials is not None and credentials.get("password") is None


def username_for_lockout(request: HttpRequest | None, credentials: dict | None) -> str | None:
    """Who an attempt counts against: the form's username, lower-cased (the admin's form finds
    users whatever the case)."""
    username = (credentials or {}).get("username")
    if not username and request is not None and request.method == "POST":
        username = request.POST.get("username")
    if not isinstance(username, str) or not username.strip():
        return None
    return username.strip().lower()[:255]


def client_address(request: HttpRequest) -> str | None:
    """The address sign-in counts, for the lockout and the SAML callback's rate limit alike
    (AXES_CLIENT_IP_CALLABLE: REMOTE_ADDR, or the address trusted proxies forwarded)."""
    return get_client_ip_address(request)


def lockout_message(request: HttpRequest | None) -> str:
    cool_off = get_cool_off(request)
    if not cool_off:
        return "Too many failed sign-ins. Ask an administrator of this instance to unlock it."
    minutes = max(1, math.ceil(cool_off.total_seconds() / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many failed sign-ins {_locked_what()}. Try again in {minutes} {unit}."


def _locked_what() -> str:
    """What the lockout is keyed on, in words (SIGNIN_LOCKOUT_BY)."""
    if settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]:
        return "for this account from this address"
    return "for this account or from this address"


def lockout_page(request: HttpRequest, message: str) -> HttpResponse:
    """The page that says so, outside the API (the API's answer: `flagadmin.api.signin`)."""
    return render(request, LOCKED_OUT_TEMPLATE, {"message": message}, status=429)


def retry_after(request: HttpRequest | None) -> str | None:
    """Seconds until a locked-out attempt may try again (`Retry-After`); None when only an
    administrator can unlock it."""
    cool_off = get_cool_off(request)
    return str(math.ceil(cool_off.total_seconds())) if cool_off else None


# --- login_attempts: Unleash's per-user count of failed sign-ins ---------------------------


def count_failed_password_sign_in(sender: Any, credentials: dict, request: Any = None, **kwargs):
    """user_login_failed: a failed password sign-in counts against the user it names (SAML
    counts its own refusals in auth_saml.services, which know the user for sure). An attempt
    refused by the lockout is no attempt at a password: it counts nothing and writes nothing."""
    if "password" not in credentials or getattr(request, "signin_refused_by_lockout", False):
        return
    username = credentials.get("username")
    if isinstance(username, str) and username.strip():
        User.objects.filter(
            Q(username__iexact=username.strip()) | Q(email__iexact=username.strip())
        ).update(login_attempts=F("login_attempts") + 1)


def reset_failed_sign_ins(sender: Any, request: Any, user: Any, **kwargs) -> None:
    """user_logged_in: a successful sign-in starts the count again."""
    if isinstance(user, User) and user.login_attempts:
        User.objects.filter(pk=user.pk).update(login_attempts=0)
        user.login_attempts = 0
