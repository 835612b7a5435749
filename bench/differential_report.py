"""What bench/differential.py found and how it tells it: each admin call's statuses, each
set-up's outcome (payload differences, SDK decisions compared and differing), the printed
table and total line, and the Markdown findings (`--findings`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.differential_contexts import is_sticky
from bench.differential_setups import Setup

ENVIRONMENTS = ("development", "production")
SDKS = ("python", "node")


@dataclass
class CallRecord:
    method: str
    path: str
    statuses: dict[str, int | None]  # None: not sent (it needs an id this server never gave)
    answers: dict[str, Any]

    @property
    def differs(self) -> bool:
        return len(set(self.statuses.values())) > 1


@dataclass
class Outcome:
    setup: Setup
    flag: str
    calls: list[CallRecord] = field(default_factory=list)
    payload: dict[str, str | None] = field(default_factory=dict)  # env -> first difference
    decisions: dict[str, int] = field(default_factory=dict)  # sdk -> compared
    mismatches: dict[str, int] = field(default_factory=dict)  # sdk -> differing
    # On Unleash in development, per SDK: how many compared contexts are on, and the variants
    # served (a sanity check that a set-up tests what it means to).
    on: dict[str, int] = field(default_factory=dict)
    variants: set[str] = field(default_factory=set)
    examples: list[str] = field(default_factory=list)

    @property
    def status_differs(self) -> bool:
        return any(record.differs for record in self.calls)


def call_list(records: list[CallRecord]) -> list[dict[str, Any]]:
    return [{"method": r.method, "path": r.path, "statuses": r.statuses} for r in records]


def compare(
    outcome: Outcome, answers: dict[tuple[str, str], dict], context_list: list[dict]
) -> None:
    sticky = [is_sticky(context, outcome.setup.sticky_on) for context in context_list]
    for sdk in SDKS:
        compared = differing = 0
        for environment in outcome.setup.environments:
            left = answers[(sdk, "unleash")][environment][outcome.flag]
            right = answers[(sdk, "flagadmin")][environment][outcome.flag]
            for index, (a, b) in enumerate(zip(left, right, strict=True)):
                if not sticky[index]:
                    continue
                if environment == "development":
                    outcome.on[sdk] = outcome.on.get(sdk, 0) + bool(a[0])
                    outcome.variants.add(a[1])
                compared += 2
                wrong = (a[0] != b[0]) + (a[1:] != b[1:])
                differing += wrong
                if wrong and len(outcome.examples) < 3:
                    outcome.examples.append(
                        f"{sdk} {environment} {json.dumps(context_list[index])}: "
                        f"unleash {json.dumps(a)} flagadmin {json.dumps(b)}"
                    )
        outcome.decisions[sdk] = compared
        outcome.mismatches[sdk] = differing


# --- the report ------------------------------------------------------------------------------


@dataclass
class Report:
    outcomes: list[Outcome]
    uncovered: list[Setup]
    probes: dict[str, int]
    token_calls: list[CallRecord]
    payloads: dict[str, dict[str, dict]]

    @property
    def decisions(self) -> int:
        return sum(sum(o.decisions.values()) for o in self.outcomes)

    @property
    def mismatches(self) -> int:
        return sum(sum(o.mismatches.values()) for o in self.outcomes)

    @property
    def status_differences(self) -> list[tuple[str, CallRecord]]:
        found = [("client tokens", record) for record in self.token_calls if record.differs]
        for outcome in self.outcomes:
            found += [(outcome.setup.slug, r) for r in outcome.calls if r.differs]
        return found

    @property
    def failed(self) -> bool:
        return self.mismatches > 0 or bool(self.status_differences)

    def print(self, timings: tuple[float, float, float, float], contexts: int) -> None:
        width = max(len(o.setup.slug) for o in self.outcomes)
        print(
            f"{'set-up':<{width}}  {'python':>11}  {'node':>11}  status  payload  "
            "on Unleash (python/node)"
        )
        for o in self.outcomes:
            sdk = "  ".join(f"{o.mismatches[s]:>5}/{o.decisions[s]:<5}" for s in SDKS)
            status = "DIFF" if o.status_differs else "same"
            payload = "same" if not any(o.payload.values()) else "DIFF"
            on = "/".join(str(o.on.get(sdk, 0)) for sdk in SDKS)
            served = f"{on} on, variants {','.join(sorted(o.variants))}"
            print(f"{o.setup.slug:<{width}}  {sdk}  {status:<6}  {payload:<7}  {served}")
        for o in self.outcomes:
            if not (o.status_differs or any(o.payload.values()) or any(o.mismatches.values())):
                continue
            print(f"\n* {o.setup.slug} ({o.flag})")
            for record in o.calls:
                if record.differs:
                    print(f"  status: {record.method} {record.path}: {record.statuses}")
                    for server, answer in record.answers.items():
                        print(f"    {server}: {json.dumps(answer)[:300]}")
            for environment, difference in o.payload.items():
                if difference:
                    print(f"  payload {environment}: {difference[:400]}")
            for example in o.examples:
                print(f"  e.g. {example[:600]}")
        for label, record in self.status_differences:
            if label == "client tokens":
                print(f"\nstatus differs for a client token: {record.statuses}")
        refused = [
            (o.setup.slug, r)
            for o in self.outcomes
            for r in o.calls
            if not r.differs and (next(iter(r.statuses.values())) or 0) >= 300
        ]
        if refused:
            print("\nadmin calls both servers refused (the same status; no finding):")
            for slug, record in refused:
                status, answer = record.statuses["unleash"], json.dumps(record.answers["unleash"])
                print(f"  {slug}: {record.method} {record.path}: {status} {answer[:160]}")
        if self.uncovered:
            print("\nnot covered (flagadmin answers the endpoint's probe with an error):")
            for name, status in self.probes.items():
                if status >= 300 or status == 0:
                    slugs = [s.slug for s in self.uncovered if s.requires == name]
                    print(f"  {name}: flagadmin {status}; set-ups skipped: {', '.join(slugs)}")
        setups_off = sum(1 for o in self.outcomes if any(o.mismatches.values()))
        payload_off = sum(1 for o in self.outcomes if any(o.payload.values()))
        both = sum(1 for o in self.outcomes if len(o.setup.environments) > 1)
        print(
            f"\n{len(self.outcomes)} set-ups x {contexts} contexts x 2 SDKs (in development; "
            f"production too for {both}); set-up {timings[0]:.1f} s, payloads "
            f"{timings[1]:.1f} s, SDKs {timings[2]:.1f} s, total {timings[3]:.1f} s"
        )
        print(
            f"set-ups with mismatches: {setups_off}; payloads differing: {payload_off}; "
            f"admin calls whose status differs: {len(self.status_differences)}"
        )
        print(f"differential: {self.decisions} decisions, {self.mismatches} mismatches")

    def record(self) -> dict[str, Any]:
        """Every admin call with both statuses, and each set-up's counts (`--record`)."""
        return {
            "client_tokens": call_list(self.token_calls),
            "probes": self.probes,
            "setups": [
                {
                    "setup": o.setup.slug,
                    "flag": o.flag,
                    "calls": call_list(o.calls),
                    "payload_differences": o.payload,
                    "decisions": o.decisions,
                    "mismatches": o.mismatches,
                    "on_at_unleash": o.on,
                }
                for o in self.outcomes
            ],
            "not_covered": [s.slug for s in self.uncovered],
            "decisions": self.decisions,
            "mismatches": self.mismatches,
        }

    def markdown(self, prefix: str, contexts: int) -> str:
        lines = [
            "# Differential test: flagadmin against Unleash 8.2",
            "",
            f"Run `{prefix}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{contexts} contexts, SDK decisions in development (and production where a "
            "set-up writes there), payloads compared in both, "
            "SDKs Python UnleashClient and Node unleash-client.",
            "",
            f"**{self.decisions} decisions, {self.mismatches} mismatches**; "
            f"{len(self.status_differences)} admin calls answered with different statuses.",
            "",
            "| set-up | python | node | status | payload: first difference, unleash != flagadmin |",
            "|---|---|---|---|---|",
        ]
        for o in self.outcomes:
            if not (o.status_differs or any(o.payload.values()) or any(o.mismatches.values())):
                continue
            differences = "; ".join(
                f"{env}: `{diff[:200]}`" for env, diff in o.payload.items() if diff
            )
            statuses = "; ".join(
                f"{r.method} {r.path.split('{flag}')[-1] or 'flag'} {r.statuses}"
                for r in o.calls
                if r.differs
            )
            lines.append(
                f"| {o.setup.slug} | {o.mismatches['python']}/{o.decisions['python']} "
                f"| {o.mismatches['node']}/{o.decisions['node']} | {statuses or 'same'} "
                f"| {differences or 'same'} |"
            )
        if self.uncovered:
            lines += ["", "Not covered (flagadmin has no such endpoint yet):", ""]
            for name, status in self.probes.items():
                if status >= 300 or status == 0:
                    slugs = [s.slug for s in self.uncovered if s.requires == name]
                    lines.append(f"- {name}: probe answered {status}; skipped {', '.join(slugs)}")
        same = [
            o.setup.slug
            for o in self.outcomes
            if not (o.status_differs or any(o.payload.values()) or any(o.mismatches.values()))
        ]
        lines += ["", f"Identical ({len(same)}): {', '.join(same)}", ""]
        return "\n".join(lines)
