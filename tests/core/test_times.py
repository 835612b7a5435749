"""One way to write a moment (`flagadmin.core.times.api_timestamp`): exactly what DRF's
`DateTimeField` writes with the project's settings, and what the writers that are not Python
calls write for the same moment: the JSON renderers (for the times in UTC that the read models
hand them) and the database (`UtcTimestampText`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from datetime import timezone as fixed_offset
from zoneinfo import ZoneInfo

import pytest
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from features.models import Feature
from features.selectors import UtcTimestampText
from flagadmin.api.renderers import encode_json
from flagadmin.core.times import api_timestamp
from tests.factories import FeatureFactory

MOMENTS = {
    "utc": datetime(2026, 3, 1, 12, 30, 15, tzinfo=UTC),
    "utc-microseconds": datetime(2026, 3, 1, 12, 30, 15, 250000, tzinfo=UTC),
    "utc-one-microsecond": datetime(2026, 3, 1, 12, 30, 15, 1, tzinfo=UTC),
    "utc-midnight": datetime(2026, 1, 1, tzinfo=UTC),
    "plus-05-30": datetime(
        2026, 3, 1, 18, 0, 15, 123456, tzinfo=fixed_offset(timedelta(hours=5, minutes=30))
    ),
    "new-york-summer": datetime(2026, 7, 1, 8, 0, tzinfo=ZoneInfo("America/New_York")),
    "paris-new-year": datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=ZoneInfo("Europe/Paris")),
}
UTC_MOMENTS = {name: moment for name, moment in MOMENTS.items() if name.startswith("utc")}


class MomentSerializer(serializers.Serializer):
    at = serializers.DateTimeField()


@pytest.mark.parametrize("moment", MOMENTS.values(), ids=MOMENTS.keys())
def test_api_timestamp__writes_what_drf_datetime_field_writes(moment):
    written = api_timestamp(moment)

    assert written == MomentSerializer({"at": moment}).data["at"]
    assert written.endswith("Z")
    assert datetime.fromisoformat(written) == moment


def test_api_timestamp__none__none():
    assert api_timestamp(None) is None


@pytest.mark.parametrize("moment", UTC_MOMENTS.values(), ids=UTC_MOMENTS.keys())
def test_json_renderers__moment_in_utc__written_as_api_timestamp(moment):
    expected = json.dumps({"at": api_timestamp(moment)}, separators=(",", ":")).encode()

    assert (encode_json({"at": moment}), JSONRenderer().render({"at": moment})) == (
        expected,
        expected,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("moment", MOMENTS.values(), ids=MOMENTS.keys())
def test_database__utc_timestamp_text__written_as_api_timestamp(moment):
    FeatureFactory(name="timed", created_at=moment)

    written = (
        Feature.objects.filter(pk="timed")
        .annotate(text=UtcTimestampText("created_at"))
        .values_list("text", flat=True)
        .get()
    )

    assert written == api_timestamp(moment)
