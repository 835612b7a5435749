"""What SDK pollers see of out-of-order commits, from outside: two instances of the production
stack on one PostgreSQL database, pollers going through both in turn.

    .venv/bin/python bench/client_consistency.py --events 20

Each event turns two flags to the same new state in two transactions that commit out of order:
the first takes its audit event id (the lower one) and waits, the second takes the higher id
and commits, and `--gap` seconds later the first commits. `--pollers` pollers, each holding
one ETag as an SDK does, poll `GET /api/client/features` every `--interval` seconds, turn by
turn on each instance. Printed: how long after the last commit a poll still answered the old
state of the first flag (the bound is CLIENT_API_REUSE_SECONDS, 1 s, plus a build), and how
often a poller that had seen a flag's new state was then given the old one again (never).
Then, for `--strategy-loop` seconds, a flag's only strategy is deleted (the environment off)
and added back (on), each in one transaction: how many full answers had a flag on without any
strategy, a state never committed (none).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench_client_consistency"
FEATURES = "/api/client/features"


def set_state(name: str, enabled: bool, took_id: threading.Event, go: threading.Event) -> None:
    """In one transaction: the flag's event (its id taken now), then, once `go`, its state."""
    from django.db import connection, transaction

    from features.models import FeatureEnvironment
    from flagadmin.core.audit import record_event

    try:
        with transaction.atomic():
            record_event("feature-environment-toggled", actor=None, feature_name=name)
            took_id.set()
            go.wait()
            FeatureEnvironment.objects.filter(feature_id=name).update(enabled=enabled)
    finally:
        connection.close()


def out_of_order(enabled: bool, gap: float) -> tuple[float, float]:
    """Flag `early` takes the lower event id and commits `gap` s after `late`; returns when
    each committed (late, early)."""
    early_took, late_took, early_go, late_go = (threading.Event() for _ in range(4))
    early = threading.Thread(target=set_state, args=("early", enabled, early_took, early_go))
    late = threading.Thread(target=set_state, args=("late", enabled, late_took, late_go))
    early.start()
    early_took.wait()
    late.start()
    late_took.wait()
    late_go.set()
    late.join()
    late_at = time.monotonic()
    time.sleep(gap)
    early_go.set()
    early.join()
    return late_at, time.monotonic()


class Poller(threading.Thread):
    """An SDK: one ETag, every `interval` s, the instances in turn. Records (when, instance,
    early's state, late's state) for every answer."""

    def __init__(self, instances: list[str], token: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.instances, self.token, self.interval = instances, token, interval
        self.stopping = threading.Event()
        self.seen: list[tuple[float, int, bool, bool]] = []
        # Full answers, and those with a flag on without any strategy (never committed).
        self.full = self.torn = 0

    def run(self) -> None:
        etag, state, turn = None, None, 0
        while not self.stopping.is_set():
            headers = {"Authorization": self.token}
            if etag:
                headers["If-None-Match"] = etag
            url = self.instances[turn % len(self.instances)] + FEATURES
            request = urllib.request.Request(url, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    body = json.loads(response.read())
                    etag = response.headers["ETag"]
                    flags = {flag["name"]: flag["enabled"] for flag in body["features"]}
                    state = (flags["early"], flags["late"])
                    self.full += 1
                    self.torn += any(
                        flag["enabled"] and not flag["strategies"] for flag in body["features"]
                    )
            except urllib.error.HTTPError as error:
                if error.code != 304:
                    raise
            if state is not None:
                self.seen.append((time.monotonic(), turn % len(self.instances), *state))
            turn += 1
            self.stopping.wait(self.interval)


def strategy_comes_and_goes(seconds: float) -> int:
    """For `seconds`, flag `late`'s only strategy is deleted (its environment turned off with
    it, as Unleash does) and added back (the environment on), each in one transaction;
    returns how many times."""
    from django.db import connection, transaction

    from features.models import FeatureEnvironment, FeatureStrategy
    from flagadmin.core.audit import record_event

    environment = FeatureEnvironment.objects.get(feature_id="late")
    rounds, deadline = 0, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            with transaction.atomic():
                FeatureStrategy.objects.filter(feature_environment=environment).delete()
                FeatureEnvironment.objects.filter(pk=environment.pk).update(enabled=False)
                record_event("feature-strategy-remove", actor=None, feature_name="late")
            with transaction.atomic():
                FeatureStrategy.objects.create(feature_environment=environment, name="default")
                FeatureEnvironment.objects.filter(pk=environment.pk).update(enabled=True)
                record_event("feature-strategy-add", actor=None, feature_name="late")
            rounds += 1
    finally:
        connection.close()
    return rounds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--every", type=float, default=3.0, help="seconds between events")
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between the commits")
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--strategy-loop", type=float, default=10, help="seconds of the strategy's comings"
    )
    parser.add_argument(
        "--reuse-seconds",
        help="the servers' CLIENT_API_REUSE_SECONDS (default: the app's, 1); 0 rebuilds a "
        "body for every poll after a change, so more states are sampled",
    )
    args = parser.parse_args()

    url = harness.create_database(args.database_url)
    harness.setup_django(url)
    from features.models import Feature, FeatureEnvironment, FeatureStrategy
    from flagadmin.core.models import TokenType
    from flagadmin.core.tokens import issue_token

    for name in ("early", "late"):
        Feature.objects.create(name=name, project_id="default")
        environment = FeatureEnvironment.objects.create(
            feature_id=name, environment_id="development", enabled=False
        )
        FeatureStrategy.objects.create(feature_environment=environment, name="default")
    token = issue_token(
        name="sdk", token_type=TokenType.CLIENT, projects=["*"], environment="development"
    )[1]
    with (
        harness.serve(
            url, workers=args.workers, threads=8, worker_class="gthread", stack="proxy"
        ) as first,
        harness.serve(
            url, workers=args.workers, threads=8, worker_class="gthread", stack="proxy"
        ) as second,
    ):
        pollers = [Poller([first, second], token, args.interval) for _ in range(args.pollers)]
        for poller in pollers:
            poller.start()
        time.sleep(1)
        committed = []
        for number in range(args.events):
            committed.append((*out_of_order(number % 2 == 0, args.gap), number % 2 == 0))
            time.sleep(args.every)
        events_end = time.monotonic()
        full_before = sum(poller.full for poller in pollers)
        torn_before = sum(poller.torn for poller in pollers)
        comings = strategy_comes_and_goes(args.strategy_loop)
        for poller in pollers:
            poller.stopping.set()
            poller.join()

    stale, backward, answers = [], 0, 0
    for number, (late_at, at, enabled) in enumerate(committed):
        # This event's answers: from its first commit to the next event's first.
        until = committed[number + 1][0] if number + 1 < len(committed) else float("inf")
        old_after = [
            when - at
            for poller in pollers
            for when, _, early, _ in poller.seen
            if at < when < min(until, events_end) and early != enabled
        ]
        stale.append(max(old_after, default=0.0))
        for poller in pollers:
            window = [seen for seen in poller.seen if late_at < seen[0] < min(until, events_end)]
            answers += len(window)
            for flag in (2, 3):
                states = [seen[flag] for seen in window]
                if enabled in states:
                    backward += any(state != enabled for state in states[states.index(enabled) :])
    stale.sort()
    stale = stale or [0.0]
    print(
        f"{args.events} out-of-order events ({args.gap} s between the commits), "
        f"{args.pollers} pollers every {args.interval} s over 2 instances x {args.workers} "
        f"workers, {answers} answers"
    )
    print(
        f"  old state served after the last commit: median {stale[len(stale) // 2]:.2f} s, "
        f"max {stale[-1]:.2f} s"
    )
    print(f"  pollers sent back to an older state: {backward}")
    full = sum(poller.full for poller in pollers) - full_before
    torn = sum(poller.torn for poller in pollers) - torn_before
    print(
        f"a flag's only strategy deleted and added back {comings} times in "
        f"{args.strategy_loop:g} s: {torn} of {full} full answers had a flag on without any "
        "strategy, a state never committed"
    )
    return 0 if backward == torn == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
