"""The scale-out path (docs/scale-out.md): one flagadmin, two open-source
Unleash Proxies (`@unleash/proxy`) in front of it, each a server-side SDK with its own client
token, and the official browser SDK (`unleash-proxy-client`, run in Node with its global
fetch) against each proxy. Both npm packages are installed by `npm ci` in tests/proxy from its
package-lock.json (.ci/run does it first; the fixture does it when they are missing).

Checked: flags, variants and context updates through each proxy; a toggle in flagadmin
reaching both proxies within their refresh interval (plus the one fetch that carries it); the
browser's usage reaching flagadmin's figures through the proxies."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from features.models import ClientInstance, FeatureUsageBucket
from flagadmin.core.models import TokenType
from tests.factories import make_token

pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

PROXY_DIR = Path(__file__).resolve().parents[1] / "proxy"
FEATURES = "/api/admin/projects/default/features"
# How often each proxy polls flagadmin, and each browser SDK its proxy (the SDK counts seconds).
PROXY_REFRESH_MS = 1000
BROWSER_REFRESH_S = 1
# What a change may take beyond the refresh interval to show on a proxy: the fetch that
# carries it and this test's own polling, on a machine that runs other work too.
FETCH_ALLOWANCE_S = 1.5
CLIENT_KEY = "browser-key-{}"
BOB, ALICE = {"userId": "bob"}, {"userId": "alice"}
NIGHT = {"type": "string", "value": "night"}


class NodeProcess:
    """A Node script speaking one JSON line a message; its output read by a thread, so that a
    silent or stuck process fails the test after `timeout` seconds instead of hanging it."""

    def __init__(self, script: str, options: dict, *, stdin: bool = False) -> None:
        environment = {**os.environ, "SCARF_ANALYTICS": "false", "DO_NOT_TRACK": "1"}
        self.process = subprocess.Popen(
            ["node", script, json.dumps(options)],
            cwd=PROXY_DIR,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(
            target=self._read, args=(self.process.stdout, self.lines), daemon=True
        ).start()
        threading.Thread(target=self._drain, daemon=True).start()

    @staticmethod
    def _read(stream, lines: queue.Queue) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _drain(self) -> None:
        for line in self.process.stderr:
            self.errors.append(line)

    def next_message(self, timeout: float = 30) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no answer in {timeout} s; stderr: {''.join(self.errors)}"
            ) from None
        assert line is not None, f"the process ended; stderr: {''.join(self.errors)}"
        return json.loads(line)

    def ask(self, command: dict, timeout: float = 30) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.next_message(timeout)

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def proxy_packages() -> Path:
    """@unleash/proxy and unleash-proxy-client, installed from tests/proxy/package-lock.json
    when they are not yet (without install scripts, as .ci/run installs them)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not installed (.ci/run installs Debian's nodejs and npm)")
    installed = [
        PROXY_DIR / "node_modules" / package / "package.json"
        for package in ("@unleash/proxy", "unleash-proxy-client")
    ]
    if not all(path.exists() for path in installed):
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=PROXY_DIR,
            check=True,
            capture_output=True,
        )
    return PROXY_DIR


@pytest.fixture
def admin() -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.ADMIN)[1])
    return client


def call(client: APIClient, method: str, url: str, body: dict | None = None) -> dict:
    response = getattr(client, method)(
        url, json.dumps(body) if body is not None else None, content_type="application/json"
    )
    assert response.status_code < 300, response.content
    return response.json() if response.content else {}


def environment_url(flag: str) -> str:
    return f"{FEATURES}/{flag}/environments/development"


@pytest.fixture
def flags(admin) -> None:
    """`banner`: on for alice only; `theme`: on for everyone, variant `dark` with a payload;
    `checkout`: off (no strategy) until a test turns it on."""
    for name in ("banner", "theme", "checkout"):
        call(admin, "post", FEATURES, {"name": name})
    only_alice = {"contextName": "userId", "operator": "IN", "values": ["alice"]}
    call(
        admin,
        "post",
        f"{environment_url('banner')}/strategies",
        {"name": "flexibleRollout", "parameters": {"rollout": "100"}, "constraints": [only_alice]},
    )
    dark = {"name": "dark", "weight": 1000, "weightType": "variable", "stickiness": "default"}
    call(
        admin,
        "post",
        f"{environment_url('theme')}/strategies",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100"},
            "variants": [{**dark, "payload": NIGHT}],
        },
    )
    for name in ("banner", "theme"):
        call(admin, "post", f"{environment_url(name)}/on")


def get(url: str, token: str = "") -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": token})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


class Proxy:
    def __init__(self, process: NodeProcess, url: str, client_key: str, app_name: str) -> None:
        self.process, self.url, self.client_key, self.app_name = process, url, client_key, app_name

    def enabled(self, context: dict) -> set[str]:
        """The flags on for `context`, as the proxy answers a browser (`GET /proxy`)."""
        query = "&".join(f"{key}={value}" for key, value in context.items())
        status, body = get(f"{self.url}?{query}", self.client_key)
        assert status == 200, status
        return {toggle["name"] for toggle in json.loads(body)["toggles"]}


@pytest.fixture
def proxies(proxy_packages, live_server, flags) -> Iterator[list[Proxy]]:
    """Two proxies against the served app, each with a client token of its own (project
    `default`, environment `development`), ready (their first fetch done)."""
    started: list[Proxy] = []
    try:
        for index in (1, 2):
            token = make_token(
                TokenType.CLIENT,
                name=f"proxy-{index}",
                projects=["default"],
                environment="development",
            )[1]
            app_name = f"flagadmin-proxy-{index}"
            process = NodeProcess(
                "proxy.js",
                {
                    "unleashUrl": f"{live_server.url}/api/",
                    "unleashApiToken": token,
                    "clientKeys": [CLIENT_KEY.format(index)],
                    "refreshInterval": PROXY_REFRESH_MS,
                    "metricsInterval": 1000,
                    "unleashAppName": app_name,
                    "unleashInstanceId": f"{app_name}-test",
                },
            )
            port = process.next_message()["port"]
            started.append(
                Proxy(process, f"http://127.0.0.1:{port}/proxy", CLIENT_KEY.format(index), app_name)
            )
        for proxy in started:
            wait_until(lambda p=proxy: get(f"{p.url}/health")[0] == 200, timeout=30)
        yield started
    finally:
        for proxy in started:
            proxy.process.stop()


@pytest.fixture
def start_browsers(proxies) -> Iterator:
    """`start_browsers(refresh=...)`: the browser SDK against each proxy, started for bob (its
    first fetch done). Without `refresh` it fetches only on a context update: a refresh that
    starts during `updateContext` aborts the update's own fetch, so that `updateContext`
    returns before the toggles of the new context are in (the SDK's way; apps wait for its
    `update` event)."""
    started: list[NodeProcess] = []

    def start(*, refresh: bool) -> list[NodeProcess]:
        for proxy in proxies:
            browser = NodeProcess(
                "browser.js",
                {
                    "url": proxy.url,
                    "clientKey": proxy.client_key,
                    "appName": "flagadmin-web",
                    "refreshInterval": BROWSER_REFRESH_S,
                    "disableRefresh": not refresh,
                    "metricsInterval": 1,
                    "context": BOB,
                },
                stdin=True,
            )
            started.append(browser)
            assert browser.next_message() == {"ready": True}
        return started

    try:
        yield start
    finally:
        for browser in started:
            browser.stop()


def wait_until(condition, timeout: float, every: float = 0.05) -> float:
    """Seconds until `condition()` held; fails after `timeout`."""
    began = time.monotonic()
    while not condition():
        assert time.monotonic() - began < timeout, f"not within {timeout} s"
        time.sleep(every)
    return time.monotonic() - began


DISABLED = {"name": "disabled", "enabled": False, "payload": None}
DARK = {"name": "dark", "enabled": True, "payload": NIGHT}
READ = ["banner", "theme", "checkout", "no-such-flag"]


def test_scale_out__browser_sdk_through_each_proxy__flags_variants_context(start_browsers):
    for browser in start_browsers(refresh=False):
        as_bob = browser.ask({"read": READ})
        as_alice = browser.ask({"context": ALICE, "read": READ})
        back_to_bob = browser.ask({"context": BOB, "read": READ})

        assert (
            as_bob
            == back_to_bob
            == {
                "enabled": {
                    "banner": False,
                    "theme": True,
                    "checkout": False,
                    "no-such-flag": False,
                },
                "variants": {
                    "banner": DISABLED,
                    "theme": DARK,
                    "checkout": DISABLED,
                    "no-such-flag": DISABLED,
                },
            }
        )
        assert as_alice["enabled"] == {
            "banner": True,
            "theme": True,
            "checkout": False,
            "no-such-flag": False,
        }
        assert as_alice["variants"]["banner"] == DISABLED  # on, without variants


def test_scale_out__toggle_reaches_both_proxies_within_refresh_interval(
    admin, proxies, start_browsers
):
    browsers = start_browsers(refresh=True)
    assert [proxy.enabled(BOB) for proxy in proxies] == [{"theme"}, {"theme"}]

    call(admin, "post", f"{environment_url('checkout')}/on")
    turned_on = time.monotonic()
    on_proxy = {}
    pending = set(range(len(proxies)))
    while pending:
        for index in sorted(pending):
            if "checkout" in proxies[index].enabled(BOB):
                on_proxy[index] = time.monotonic() - turned_on
                pending.discard(index)
        assert time.monotonic() - turned_on < 30, "a proxy never saw the toggle"
        time.sleep(0.05)
    in_browsers = [browser.ask({"waitFor": "checkout", "enabled": True}) for browser in browsers]
    seen_by_browsers = time.monotonic() - turned_on

    limit = PROXY_REFRESH_MS / 1000 + FETCH_ALLOWANCE_S
    assert max(on_proxy.values()) < limit, on_proxy
    assert seen_by_browsers < limit + BROWSER_REFRESH_S, (seen_by_browsers, in_browsers)
    assert [browser.ask({"read": ["checkout"]})["enabled"] for browser in browsers] == [
        {"checkout": True},
        {"checkout": True},
    ]


def test_scale_out__toggle_off__reaches_both_proxies(admin, proxies):
    call(admin, "post", f"{environment_url('theme')}/off")
    turned_off = time.monotonic()

    seconds = [
        wait_until(lambda p=proxy: "theme" not in p.enabled(BOB), timeout=30) for proxy in proxies
    ]

    assert time.monotonic() - turned_off < PROXY_REFRESH_MS / 1000 + FETCH_ALLOWANCE_S, seconds


def test_scale_out__browser_usage_reaches_flagadmin_through_each_proxy(proxies, start_browsers):
    for browser in start_browsers(refresh=False):
        browser.ask({"read": ["theme", "banner"]})
        assert browser.ask({"sendMetrics": True}) == {"sent": True}

    def counted() -> list[tuple]:
        return list(
            FeatureUsageBucket.objects.order_by("app_name", "feature_name").values_list(
                "app_name", "feature_name", "environment", "yes", "no"
            )
        )

    # Each proxy reports what its browsers evaluated, as the SDK it is, within its metrics
    # interval: isEnabled and getVariant count once each.
    wait_until(lambda: len(counted()) == 4, timeout=15)
    assert counted() == [
        (proxy.app_name, flag, "development", yes, no)
        for proxy in proxies
        for flag, yes, no in (("banner", 0, 2), ("theme", 2, 0))
    ]
    registered = ClientInstance.objects.order_by("app_name").values_list("app_name", flat=True)
    assert list(registered) == [proxy.app_name for proxy in proxies]
