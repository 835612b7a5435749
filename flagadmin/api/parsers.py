"""A strict JSON parser: the 100 kB limit, UTF-8 only, no NaN/Infinity."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from flagadmin.api.errors import ContentTooLargeError


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.MAX_REQUEST_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ContentTooLargeError()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError("the body is not UTF-8") from exc
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ParseError(str(exc)) from exc
