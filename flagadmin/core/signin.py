"""Sign-in throttling with django-axes, for the Django admin's password form and the SAML
callback: after SIGNIN_FAILURE_LIMIT failures for one user or from one address, further
attempts are refused for SIGNIN_LOCKOUT_MINUTES, before any password is hashed or any SAML
signature checked.

Axes runs first among the authentication backends (`SignInThrottleBackend`), so a locked-out
attempt never reaches ModelBackend's password hasher; the SAML callback asks before its
signature check. The user's `login_attempts` (Unleash's `loginAttempts`) counts failed
sign-ins of both kinds and is reset by a successful one.
"""

from __future__ import annotations

import math
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off
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


def username_for_lockout(request: HttpRequest | None, credentials: dict | None) -> str | None:
    """Who an attempt counts against: the form's username, or the NameID of a SAML response
    (`session_info` from djangosaml2, or `username` where the callback asks before verifying).
    Lower-cased: sign-in finds users whatever the case."""
    credentials = credentials or {}
    username = credentials.get("username")
    if not username:
        name_id = (credentials.get("session_info") or {}).get("name_id")
        username = getattr(name_id, "text", None)
    if not username and request is not None and request.method == "POST":
        username = request.POST.get("username")
    if not isinstance(username, str) or not username.strip():
        return None
    return username.strip().lower()[:255]


def is_locked_out(request: HttpRequest, username: str | None) -> bool:
    """For callers that must refuse before `authenticate` (the SAML callback's signature
    check costs more than a lookup)."""
    return not AxesProxyHandler.is_allowed(request, {"username": username})


def lockout_message(request: HttpRequest | None) -> str:
    cool_off = get_cool_off(request)
    if not cool_off:
        return "Too many failed sign-ins. Ask an administrator of this instance to unlock it."
    minutes = max(1, math.ceil(cool_off.total_seconds() / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return (
        "Too many failed sign-ins for this account or from this address. "
        f"Try again in {minutes} {unit}."
    )


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
