"""JSON bodies encoded by orjson, for the answers that run to hundreds of kilobytes (the
projects list, a project's flags), built as plain data rather than through a serializer."""

from __future__ import annotations

from typing import Any

import orjson


def encode_json(data: Any) -> bytes:
    """`data` as DRF's JSONRenderer writes it (compact, UTF-8 not escaped, aware datetimes in
    UTC as `...Z`, the fraction left out when zero), in about a tenth of its time. Two
    differences, neither of them a JSON difference: U+2028 and U+2029 are written as
    themselves (as Unleash's `JSON.stringify` does; DRF escapes them), and `Accept: ...;
    indent=N` is not honoured."""
    return orjson.dumps(data, option=orjson.OPT_UTC_Z)
