"""What checking REGEX constraint values costs at worst (`features.regexes`), in-process, no
database: the strategy body's validation (`CreateFeatureStrategySchemaSerializer`, the API's
path) and the constraints' model validator (`validate_constraints`, the Django admin's strategy
and segment forms), each with the verdicts kept from earlier checks cleared first.

    .venv/bin/python bench/regex_cost.py
    .venv/bin/python bench/regex_cost.py --rounds 9

Bodies as costly as a list may hold: `REGEX_CHARACTERS_MAX` characters in all, in patterns of
the longest length (`REGEX_MAX_LENGTH`) and in the most patterns (`REGEX_PATTERNS_MAX`), made of
the costliest constructs to parse (Unicode classes); and the issue's body: 1,000 short patterns
that RE2 compiles slowly (~100 kB). For that one it also prints what the former check (RE2's
default budget of 8 MiB, every pattern compiled) cost on a sample of them, times 1,000. Prints
the median and worst of `--rounds`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")

import django

django.setup()

from django.core.exceptions import ValidationError  # noqa: E402

from features import regexes  # noqa: E402
from features.strategy_serializers import CreateFeatureStrategySchemaSerializer  # noqa: E402
from features.validators import validate_constraints  # noqa: E402

UNITS = {
    r"\pL": r"\pL",
    r"[^\pL]": r"[^\pL]",
    r"\p{Lu}": r"\p{Lu}",
    r"(?i)\pL": r"(?i:\pL)",
}


def _patterns(unit: str, count: int, length: int) -> list[str]:
    """`count` distinct patterns of at most `length` characters, `unit` repeated."""
    patterns = []
    for n in range(count):
        tag = f"x{n}"
        patterns.append(unit * ((length - len(tag)) // len(unit)) + tag)
    return patterns


def _constraints(patterns: list[str]) -> list[dict]:
    return [{"contextName": "userId", "operator": "REGEX", "value": p} for p in patterns]


def _serializer(body: dict) -> None:
    CreateFeatureStrategySchemaSerializer(data=body).is_valid()


def _model_validator(body: dict) -> None:
    with contextlib.suppress(ValidationError):
        validate_constraints(body["constraints"])


def _timed(check: Callable[[dict], None], body: dict, rounds: int) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        regexes.is_re2_regex.cache_clear()
        started = time.perf_counter()
        check(body)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, max(times) * 1000


def _former_cost_per_pattern(patterns: list[str]) -> float:
    """The former check: RE2's default options, every value compiled (ms a pattern)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    started = time.perf_counter()
    for pattern in patterns:
        with contextlib.suppress(re2.error):
            re2.compile(pattern, options=options)
    re2.purge()
    return (time.perf_counter() - started) * 1000 / len(patterns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    count, length = regexes.REGEX_PATTERNS_MAX, regexes.REGEX_MAX_LENGTH
    characters = regexes.REGEX_CHARACTERS_MAX
    print(
        f"caps: {length} characters a pattern, {count} distinct patterns and {characters} "
        f"characters a list, RE2 program budget {regexes.PROGRAM_BUDGET // 1024} KiB; "
        f"median / worst of {args.rounds} rounds, verdicts cleared each round"
    )
    print(f"{'body':44} {'API serializer ms':>20} {'model validator ms':>20}")
    shapes = [(characters // length, length), (count, characters // count)]
    for name, unit in UNITS.items():
        for many, long in shapes:
            patterns = _patterns(unit, many, long)
            body = {"name": "default", "constraints": _constraints(patterns)}
            assert regexes.regex_count_problem(body["constraints"]) is None
            api = _timed(_serializer, body, args.rounds)
            model = _timed(_model_validator, body, args.rounds)
            label = f"{many} x {long} chars of {name}"
            print(f"{label:44} {api[0]:9.1f} / {api[1]:7.1f} {model[0]:9.1f} / {model[1]:7.1f}")
    issue = [rf"\pL{{{200 + n % 800}}}" for n in range(1000)]
    body = {"name": "default", "constraints": _constraints(issue)}
    api = _timed(_serializer, body, args.rounds)
    model = _timed(_model_validator, body, args.rounds)
    label = "the issue's 1,000 short patterns (refused)"
    print(f"{label:44} {api[0]:9.3f} / {api[1]:7.3f} {model[0]:9.3f} / {model[1]:7.3f}")
    former = _former_cost_per_pattern(issue[:20])
    print(
        f"the former check of those 1,000: {former:.1f} ms a pattern (sample of 20), "
        f"~{former:.0f} s a request, twice that when the model validator ran too"
    )
    repeated = {"name": "default", "constraints": _constraints([issue[0]] * count)}
    regexes.is_re2_regex.cache_clear()
    started = time.perf_counter()
    _serializer(repeated)
    first = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    _serializer(repeated)
    again = (time.perf_counter() - started) * 1000
    print(f"one pattern {count} times: {first:.2f} ms, then {again:.2f} ms with its verdict kept")


if __name__ == "__main__":
    main()
