"""The client's address when the app is served behind the production stack's nginx.

The app server then listens on a Unix socket that only that nginx reaches (flagadmin.serving), so
REMOTE_ADDR is empty and every client would look alike, to sign-in throttling (django-axes,
per address) among others. nginx passes the address it accepted the connection from in
X-Real-IP, replacing whatever a client sent there.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ClientAddressFromLocalProxyMiddleware:
    """REMOTE_ADDR from X-Real-IP, only when the production stack started this process
    (settings.CLIENT_ADDRESS_FROM_LOCAL_PROXY, set by flagadmin.serving) and the peer has no
    address (its Unix socket). With a TCP peer (`gunicorn flagadmin.wsgi` alone), or behind some
    other proxy on a socket that might pass a client's X-Real-IP through, the header is ignored,
    so a client cannot choose its own address."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        address_from_local_proxy(request.META)
        return self.get_response(request)


def address_from_local_proxy(meta: dict) -> None:
    """The middleware's rule, on a request's `META` (also applied by `answered_from_memory`)."""
    if settings.CLIENT_ADDRESS_FROM_LOCAL_PROXY and not meta.get("REMOTE_ADDR"):
        forwarded = meta.get("HTTP_X_REAL_IP", "").strip()
        if forwarded:
            meta["REMOTE_ADDR"] = forwarded


def signin_client_address(request: HttpRequest) -> str | None:
    """The address sign-in throttling counts (AXES_CLIENT_IP_CALLABLE).

    REMOTE_ADDR, or behind SIGNIN_PROXY_COUNT reverse proxies that each append the address they
    accepted the connection from to X-Forwarded-For, the entry the outermost of them appended
    (the SIGNIN_PROXY_COUNT-th from the right): entries to its left are whatever the client
    sent. A header shorter than that did not come through the proxies: REMOTE_ADDR then.
    """
    proxies = settings.SIGNIN_PROXY_COUNT
    if proxies:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
        if len(entries) >= proxies:
            return entries[-proxies]
    return request.META.get("REMOTE_ADDR") or None
