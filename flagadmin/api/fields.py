"""Serializer fields with JSON's strict types: a string field takes a string, a boolean field
`true`/`false`, an integer field an integer. DRF's own fields coerce ("1" -> 1, 1 -> "1"), which
the contract forbids. Messages are predicates; the error handler frames them as
"The `/body/x` property must be boolean. You sent "yes"."
"""

from __future__ import annotations

import math
from datetime import UTC
from decimal import Decimal

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from flagadmin.api.errors import ValidationError
from flagadmin.core.names import has_control_character, is_url_friendly


class StrictCharField(serializers.CharField):
    default_error_messages = {
        "invalid": "must be string",
        "blank": "must NOT have fewer than 1 characters",
        "max_length": "must NOT have more than {max_length} characters",
        "min_length": "must NOT have fewer than {min_length} characters",
        "null": "must be string",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class PrintableCharField(StrictCharField):
    """A name shown to people and written to logs (a token's name): no control characters, a
    final newline included, which a reader could not see."""

    default_error_messages = {
        "control": "must not contain control characters (\\u0000 to \\u001f, \\u007f)"
    }

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if has_control_character(value):
            self.fail("control")
        return value


class NumberAsStringField(StrictCharField):
    """A string, or a number written as JavaScript writes it (`50` is "50", `0.5` "0.5"): where
    Unleash's request validator coerces numbers into string fields (strategy parameters such
    as `rollout`, constraint values), scripts written against Unleash send numbers."""

    def to_internal_value(self, data):
        if isinstance(data, int | float) and not isinstance(data, bool):
            data = js_number_string(data)
        return super().to_internal_value(data)


def js_number_string(number: int | float) -> str:
    """`String(number)` in JavaScript: integers without a fraction, decimals in shortest form,
    an exponent only from 1e21 up and below 1e-6 (Python's repr gives the same digits)."""
    try:
        number = float(number)  # JavaScript has only doubles: 2**53 + 1 is 2**53
    except OverflowError:
        number = math.inf if number > 0 else -math.inf
    if not math.isfinite(number):
        return "Infinity" if number > 0 else "-Infinity" if number < 0 else "NaN"
    if number.is_integer():
        if abs(number) < 1e21:
            return str(int(number))
    elif 1e-6 <= abs(number) < 1e21:
        return format(Decimal(repr(number)), "f")
    mantissa, _, exponent = repr(float(number)).partition("e")
    sign = "-" if exponent.startswith("-") else "+"
    return f"{mantissa.removesuffix('.0')}e{sign}{int(exponent.lstrip('+-'))}"


class NonBlankCharField(StrictCharField):
    """A string that must hold something besides white space (names shown to people)."""

    default_error_messages = {"whitespace": "must not be blank"}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.strip():
            self.fail("whitespace")
        return value


class NonBlankPrintableCharField(NonBlankCharField):
    """Not blank, and no control characters (a project's name): a name shown whole in the admin,
    in lists and in logs, as a token's name is."""

    default_error_messages = PrintableCharField.default_error_messages

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if has_control_character(value):
            self.fail("control")
        return value


class UrlFriendlyNameField(StrictCharField):
    """A name used in URLs (flag names, project ids): see `flagadmin.core.names`."""

    default_error_messages = {
        "dot_segment": 'must not be "." or ".."',
        "not_url_friendly": "must be URL friendly: only the characters "
        "A-Z a-z 0-9 - _ . ! ~ * ' ( ) are allowed",
    }

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value in (".", ".."):
            self.fail("dot_segment")
        if not is_url_friendly(value):
            self.fail("not_url_friendly")
        return value


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "must be boolean", "null": "must be boolean"}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


# What a 64-bit database integer holds. An id outside it names nothing, and handing it to the
# database driver fails (OverflowError, NumericValueOutOfRange): a 500 instead of a 400.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def json_integer(value: object) -> int | None:
    """`value` as an int when JSON Schema calls it an integer: a JSON integer, or a number whose
    fractional part is zero (`3.0`, which Unleash's validator takes for 3); never a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer within the 64-bit range unless narrower bounds are given (the bounds are in
    the OpenAPI document too)."""

    default_error_messages = {
        "invalid": "must be integer",
        "null": "must be integer",
        "max_value": "must be <= {max_value}",
        "min_value": "must be >= {min_value}",
        "max_string_length": "must be integer",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", INT64_MIN)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        integer = json_integer(data)
        if integer is None:
            self.fail("invalid")
        return super().to_internal_value(integer)


class StrictNumberField(serializers.FloatField):
    default_error_messages = {
        "invalid": "must be number",
        "null": "must be number",
        "max_value": "must be <= {max_value}",
        "min_value": "must be >= {min_value}",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    """Enum field whose message lists the allowed values, as Unleash's does."""

    def __init__(self, choices, **kwargs):
        super().__init__(choices, **kwargs)
        allowed = ", ".join(f'"{c}"' for c in self.choices)
        self.error_messages["invalid_choice"] = (
            f"must be equal to one of the allowed values: {allowed}"
        )
        self.error_messages["null"] = f"must be equal to one of the allowed values: {allowed}"

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


# Lists in request bodies hold at most this many items unless a field says otherwise: no
# operation has a use for more, and a 100 kB body could otherwise carry ~50,000 items to check.
DEFAULT_MAX_ITEMS = 1000


class StrictListField(serializers.ListField):
    """A JSON array of at most `max_length` items (DEFAULT_MAX_ITEMS unless given).

    The length is checked before the items are: DRF checks it after, so 45,000 bad items built
    45,000 error objects (and a 9 MB error body) before "too many items" could be said."""

    default_error_messages = {
        "not_a_list": "must be array",
        "null": "must be array",
        "min_length": "must NOT have fewer than {min_length} items",
        "max_length": "must NOT have more than {max_length} items",
        "empty": "must NOT have fewer than 1 items",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", DEFAULT_MAX_ITEMS)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, list) and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class StrictDictField(serializers.DictField):
    default_error_messages = {"not_a_dict": "must be object", "null": "must be object"}


# Base for request serializers: a non-object body or nested value is "must be object". (A
# comment, not a docstring: drf-spectacular would show a base's docstring as the description of
# every request schema that has none of its own.)
class StrictSerializer(serializers.Serializer):
    default_error_messages = {"invalid": "must be object", "null": "must be object"}

    @property
    def errors(self):
        # DRF swaps the message of a top-level `null` body for "No data provided"; keep ours.
        errors = serializers.BaseSerializer.errors.fget(self)
        if isinstance(errors, list):
            errors = {serializers.api_settings.NON_FIELD_ERRORS_KEY: errors}
        return serializers.ReturnDict(errors, serializer=self)


class ClosedSerializer(StrictSerializer):
    """An object with `additionalProperties: false`: a property it does not declare is a 400."""

    def validate(self, attrs: dict) -> dict:
        extra = sorted(set(self.initial_data) - set(self.fields))
        if extra:
            path = f"/body/{extra[0]}"
            raise ValidationError.for_property(
                path,
                "The `/body` object of the request body does not allow additional properties. "
                f"Your request included the `{path}` property.",
            )
        return attrs


class StrictDateTimeField(serializers.DateTimeField):
    """An RFC 3339 date-time given as a JSON string (a missing offset means UTC).

    With `future=True` the instant must lie ahead: an expiry in the past would make a token that
    is dead on arrival, which is never what the caller meant."""

    default_error_messages = {
        "invalid": 'must match format "date-time"',
        "null": 'must match format "date-time"',
        "future": "must be a date-time in the future",
    }

    def __init__(self, *, future: bool = False, **kwargs):
        self.future = future
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            parsed = parse_datetime(data.strip())
        except ValueError:
            parsed = None
        if parsed is None:
            self.fail("invalid")
        if timezone.is_naive(parsed):
            parsed = parsed.replace(tzinfo=UTC)
        try:
            # Years 1 and 9999 with an offset fall outside what a datetime (and the database)
            # can hold once moved to UTC; that is the caller's bad value, not a server fault.
            parsed = parsed.astimezone(UTC)
        except (OverflowError, ValueError):
            self.fail("invalid")
        if self.future and parsed <= timezone.now():
            self.fail("future")
        return parsed
