"""The evaluation contexts of bench/differential.py: the same varied contexts every run
(seeded), and which of them the SDKs decide without a random draw."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


def contexts(count: int = 500, seed: int = 25) -> list[dict]:
    """`count` varied contexts, the same for every run (seeded). About one in eight has neither
    userId nor sessionId."""
    draw = random.Random(seed)
    apps = ["web", "Web", "checkout", "mobile-ios", None]
    environments = ["development", "production", "staging", None]
    tenants = [f"t{n}" for n in range(20)] + [None] * 4
    versions = [
        "1.2.3",
        "1.2.4",
        "2.0.0-beta.1",
        "2.0.0-beta.10",
        "2.0.0",
        "1.10.0",
        "0.9.9",
        "1.2.3-rc.1",
        "x",
        None,
    ]
    ages = ["17", "18", "18.0", "30", "65.5", "66", "-1", "abc", None]
    countries = ["NO", "no", "SE", "se", "US", None]
    domains = ["example.com", "EXAMPLE.no", "mail.org", "other.NO", "example.net"]
    addresses = [
        "10.0.0.1",
        "10.0.0.2",
        "192.168.1.7",
        "192.168.2.1",
        "2001:db8::1",
        "127.0.0.1",
        None,
    ]
    found = []
    for index in range(count):
        context: dict[str, Any] = {}
        identity = draw.random()
        if identity < 0.85 or index < 3:
            context["userId"] = draw.choice(
                [
                    f"user-{draw.randrange(100)}",
                    str(draw.randrange(1000)),
                    f"admin-{draw.randrange(5)}",
                    "alice",
                ]
            )
        if identity > 0.45 and index >= 3:
            context["sessionId"] = f"s-{draw.randrange(50)}"
        for key, pool in (
            ("appName", apps),
            ("environment", environments),
            ("remoteAddress", addresses),
        ):
            value = draw.choice(pool)
            if value is not None:
                context[key] = value
        if draw.random() < 0.6:
            moment = EPOCH + timedelta(hours=draw.randrange(11 * 365 * 24))  # 2020-2030
            context["currentTime"] = f"{moment:%Y-%m-%dT%H}:00:00.000Z"
        properties = {}
        for key, pool in (
            ("tenant", tenants),
            ("version", versions),
            ("age", ages),
            ("country", countries),
        ):
            value = draw.choice(pool)
            if value is not None:
                properties[key] = value
        if draw.random() < 0.7:
            properties["email"] = f"{draw.choice(['ann', 'bob', 'Eve'])}@{draw.choice(domains)}"
        if properties:
            context["properties"] = properties
        found.append(context)
    return found


def is_sticky(context: dict, fields: tuple[str, ...]) -> bool:
    """Whether the SDKs decide for `context` without a random draw, for a set-up whose
    stickiness reads `fields` (none: always)."""
    if not fields:
        return True
    for name in fields:
        if name.startswith("properties."):
            if context.get("properties", {}).get(name.removeprefix("properties.")):
                return True
        elif context.get(name):
            return True
    return False
