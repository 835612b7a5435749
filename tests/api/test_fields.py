"""The strict JSON fields every request serializer is built from."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rest_framework.exceptions import ValidationError

from flagadmin.api.fields import INT64_MAX, INT64_MIN, StrictDateTimeField, StrictIntegerField


def _error(field, value) -> str:
    with pytest.raises(ValidationError) as excinfo:
        field.run_validation(value)
    return str(excinfo.value.detail[0])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(INT64_MAX + 1, f"must be <= {INT64_MAX}", id="above-int64"),
        pytest.param(INT64_MIN - 1, f"must be >= {INT64_MIN}", id="below-int64"),
        pytest.param(True, "must be integer", id="boolean"),
        pytest.param("3", "must be integer", id="string"),
        pytest.param(3.5, "must be integer", id="fraction"),
        pytest.param(float("inf"), "must be integer", id="infinity"),
        pytest.param(1e19, f"must be <= {INT64_MAX}", id="integral-number-above-int64"),
    ],
)
def test_strict_integer__refuses(value, message):
    # Beyond 64 bits an id names nothing, and the database driver would fail on it (a 500).
    assert _error(StrictIntegerField(), value) == message


@pytest.mark.parametrize("value", [INT64_MIN, -1, 0, INT64_MAX])
def test_strict_integer__accepts_the_64_bit_range(value):
    assert StrictIntegerField().run_validation(value) == value


@pytest.mark.parametrize(("value", "expected"), [(3.0, 3), (-0.0, 0), (1e18, 10**18)])
def test_strict_integer__integral_number_is_an_integer(value, expected):
    # JSON has one number type; JSON Schema (and Unleash's validator) take 3.0 for the integer 3.
    internal = StrictIntegerField().run_validation(value)

    assert internal == expected
    assert type(internal) is int


def test_strict_integer__own_bounds_win():
    field = StrictIntegerField(min_value=0, max_value=1000)

    assert _error(field, 1001) == "must be <= 1000"
    assert _error(field, -1) == "must be >= 0"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2999-01-02T03:04:05Z", datetime(2999, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2999-01-02T05:04:05+02:00", datetime(2999, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2999-01-02T03:04:05", datetime(2999, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_strict_datetime__accepts_rfc3339(value, expected):
    assert StrictDateTimeField(future=True).run_validation(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yesterday", 'must match format "date-time"'),
        (1893456000, 'must match format "date-time"'),
        ("0001-01-01T00:00:00+01:00", 'must match format "date-time"'),
        ("2000-01-01T00:00:00Z", "must be a date-time in the future"),
    ],
)
def test_strict_datetime__refuses(value, message):
    assert _error(StrictDateTimeField(future=True), value) == message
