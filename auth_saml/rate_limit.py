"""The SAML callback's rate limit: at most `SAML_CALLBACK_RATE_LIMIT_PER_MINUTE` responses per
minute from one address, in fixed windows of a minute, as Unleash limits `/auth/saml`
(express-rate-limit, `AUTHENTICATION_RATE_LIMIT_PER_MINUTE`, 10 by default).

A SAML response cannot be guessed (it is signed by the identity provider), so a refused one is
not a guessing attempt and locks nobody out: what this bounds is the work of checking
signatures (xmlsec1 runs once per response), and an address over the limit waits until its
minute is over. It counts every response posted, accepted or not.

Kept per process, in a `BoundedCache`: each gunicorn worker counts on its own, so an address
gets up to the limit times the workers of an instance, times the instances behind a load
balancer (docs/sign-in.md). When the table is full, the address counted least recently is
forgotten first, which only ever lets more responses through, never fewer.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from django.conf import settings

from flagadmin.core.caches import BoundedCache, monotonic

WINDOW_SECONDS = 60
MAX_ADDRESSES = 10_000

# address -> (start of its window on the monotonic clock, responses counted in it)
_windows: BoundedCache[str, tuple[float, int]] = BoundedCache(
    "saml-callback-rate-limit", max_entries=MAX_ADDRESSES, evict="oldest"
)
_count_lock = threading.Lock()


@dataclass(frozen=True)
class Allowance:
    """What the limit says about one more response from an address."""

    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int  # until the address's window ends

    def headers(self) -> dict[str, str]:
        """The draft standard headers Unleash sends (express-rate-limit's `standardHeaders`),
        and `Retry-After` on a refusal."""
        headers = {
            "RateLimit-Policy": f"{self.limit};w={WINDOW_SECONDS}",
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.reset_seconds)
        return headers


def take(address: str | None) -> Allowance:
    """Count one response from `address` and say whether it may be checked. Without an address
    (no REMOTE_ADDR) every such request shares one count. A limit of 0 turns it off."""
    limit = settings.SAML_CALLBACK_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return Allowance(allowed=True, limit=0, remaining=0, reset_seconds=0)
    key = address or ""
    now = monotonic()
    with _count_lock:
        started, count = _windows.get(key) or (now, 0)
        if now - started >= WINDOW_SECONDS:
            started, count = now, 0
        allowed = count < limit
        if allowed:
            count += 1
            _windows.put(key, (started, count))
    reset = max(1, math.ceil(started + WINDOW_SECONDS - now))
    return Allowance(
        allowed=allowed, limit=limit, remaining=max(0, limit - count), reset_seconds=reset
    )


def forget_all() -> None:
    """Every address starts again (the tests' fixture)."""
    _windows.clear()
