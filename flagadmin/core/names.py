"""Unleash's rule for names that appear in URLs (flag names, project ids), and ours for names
shown to people (tokens', projects')."""

import re

# Exactly the characters JavaScript's encodeURIComponent leaves alone, so a name survives a URL
# unchanged; the path segments "." and ".." are refused too. Matched whole (`fullmatch`): Python's
# `$` also matches before a final newline, JavaScript's does not, and Unleash refuses "name\n".
URL_FRIENDLY_RE = re.compile(r"[A-Za-z0-9\-_.!~*'()]+")
# What `urllib.parse.quote` must leave alone to keep such names unchanged in a Location header.
URL_SAFE_CHARACTERS = "-_.!~*'()"


def is_url_friendly(name: str) -> bool:
    return bool(URL_FRIENDLY_RE.fullmatch(name)) and name not in (".", "..")


def has_control_character(name: str) -> bool:
    """A character no reader sees (\\u0000 to \\u001f, \\u007f), a final newline included: refused
    in names shown whole in lists, pages and logs."""
    return any(ord(character) < 0x20 or character == "\x7f" for character in name)
