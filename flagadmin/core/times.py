"""The code's clock, and how the API writes a moment.

Serializers write their times with DRF's `DateTimeField`; every time built by hand (audit event
data, the bodies built as plain data) goes through `api_timestamp`, which is that field, so a
value in an event compares equal to the same value in a response. Two writers are not Python
calls, for speed, and are held to the same text by `tests/core/test_times.py`: orjson
(`flagadmin.api.renderers.encode_json`, the projects list and a project's flags, whose times
are in UTC) and the database (`features.selectors.UtcTimestampText`, a project's flags)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from rest_framework.fields import DateTimeField

_API_DATETIME = DateTimeField()


def api_timestamp(value: datetime | None) -> str | None:
    """`value` as the API writes a datetime: DRF's ISO 8601 in UTC with `Z`, microseconds when
    there are any (`2024-03-01T12:30:15.250000Z`). None stays None."""
    return _API_DATETIME.to_representation(value)


def now() -> datetime:
    """The time the code reads where a test must be able to move it (Django's own
    `PasswordResetTokenGenerator._now` pattern): callers look it up as `times.now()`, and the
    tests' `clock` fixture replaces it. The database's clock is another matter: see
    docs/testing.md."""
    return timezone.now()
