"""Unleash's rule for names that appear in URLs (flag names, project ids)."""

import re

# Exactly the characters JavaScript's encodeURIComponent leaves alone, so a name survives a URL
# unchanged; the path segments "." and ".." are refused too. Matched whole (`fullmatch`): Python's
# `$` also matches before a final newline, JavaScript's does not, and Unleash refuses "name\n".
URL_FRIENDLY_RE = re.compile(r"[A-Za-z0-9\-_.!~*'()]+")
# What `urllib.parse.quote` must leave alone to keep such names unchanged in a Location header.
URL_SAFE_CHARACTERS = "-_.!~*'()"


def is_url_friendly(name: str) -> bool:
    return bool(URL_FRIENDLY_RE.fullmatch(name)) and name not in (".", "..")
