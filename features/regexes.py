"""The check of REGEX constraint values, bounded in cost whatever a body holds.

Unleash checks a REGEX value by compiling it with RE2JS, which has no limit on the size of the
compiled program: `\\pL{1000}` is taken. RE2 (google-re2, the engine here) parses a pattern,
then compiles it within a memory budget (8 MiB by default); a short pattern of Unicode classes
repeated costs up to ~140 ms to compile under that budget, and the parse alone ~16 us per
character of such classes. So, here:

- the program is compiled within `PROGRAM_BUDGET` (64 KiB, under a millisecond); RE2 reports
  every syntax error while parsing, before it compiles, so a pattern refused only for its
  program's size parsed, and is taken, as Unleash takes it;
- a pattern is at most `REGEX_MAX_LENGTH` (256) characters, and a list of constraints (a
  strategy's, a segment's) holds at most `REGEX_PATTERNS_MAX` (30) distinct ones, of at most
  `REGEX_CHARACTERS_MAX` (2,048) characters in all, counted before anything is parsed, as the
  parse costs in proportion to the characters (bench/regex_cost.py). Unleash caps none of
  these (its body limit aside); they are flagadmin's, far above what REGEX constraints need
  (Unleash's default of 30 constraints a strategy bounds the count on strategies anyway);
- each distinct pattern is checked once: the verdicts of the last `VERDICTS_KEPT` are kept.

The worst list, 2,048 characters of `\\pL`, costs about 40 ms once
(`bench/regex_cost.py`); a pattern checked before costs nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

REGEX_MAX_LENGTH = 256
REGEX_PATTERNS_MAX = 30
REGEX_CHARACTERS_MAX = 2048
PROGRAM_BUDGET = 64 * 1024
VERDICTS_KEPT = 4096
# RE2's message for a program over its budget (RE2::ErrorPatternTooLarge).
_TOO_LARGE = "pattern too large"


@cache
def _options() -> object:
    """RE2's options for the check, made on first use: RE2 is loaded by
    the processes that check a REGEX constraint, not by every one at start-up. It parses
    silently: a refused pattern is a 400, not a line on the server's stderr."""
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = PROGRAM_BUDGET
    return options


@lru_cache(maxsize=VERDICTS_KEPT)
def is_re2_regex(pattern: str) -> bool:
    """Whether RE2, the engine of Unleash and its SDKs, parses `pattern` (see the module)."""
    import re2

    try:
        re2.compile(pattern, options=_options())
    except re2.error as error:
        return _TOO_LARGE in str(error)
    return True


def regex_problem(pattern: str) -> str | None:
    """What is wrong with a REGEX constraint's `value`, or None."""
    if len(pattern) > REGEX_MAX_LENGTH:
        return f"must be a regular expression of at most {REGEX_MAX_LENGTH} characters"
    if not pattern or not is_re2_regex(pattern):
        return "must be a regular expression (RE2 syntax)"
    return None


def regex_count_problem(constraints: Any) -> str | None:
    """Too many distinct REGEX patterns in a list of constraints (as sent: anything), or None.
    Counted before any is parsed."""
    if not isinstance(constraints, Sequence) or isinstance(constraints, str):
        return None
    patterns = {
        item.get("value")
        for item in constraints
        if isinstance(item, dict)
        and item.get("operator") == "REGEX"
        and isinstance(item.get("value"), str)
    }
    if len(patterns) > REGEX_PATTERNS_MAX:
        return (
            f"must hold at most {REGEX_PATTERNS_MAX} distinct REGEX patterns; "
            f"it holds {len(patterns)}"
        )
    characters = sum(len(pattern) for pattern in patterns)
    if characters > REGEX_CHARACTERS_MAX:
        return (
            f"must hold at most {REGEX_CHARACTERS_MAX} characters of distinct REGEX patterns "
            f"in all; it holds {characters}"
        )
    return None
