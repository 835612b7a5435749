"""flagadmin.core.caches: the one bounded per-process cache. How each cache of the app keeps its
own rule (revisions, versions, expiry) is tested through the API with it; here the bounds,
the orders, the time bound, thread safety, and that docs/caches.md declares every cache."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import threading
import types
from pathlib import Path

import pytest
from django.urls import get_resolver

from flagadmin.core.caches import BoundedCache, clear_all, every_cache, named

DESIGN_PAGE = Path(__file__).resolve().parents[2] / "docs" / "caches.md"
APP_PACKAGES = {
    "flagadmin",
    "projects",
    "groups",
    "users",
    "features",
    "overview",
    "client_api",
    "evaluation",
    "frontend_api",
    "auth_saml",
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("evict", ["oldest", "least_recent"])
def test_bound_in_entries__the_first_put_goes_first(evict):
    cache = BoundedCache("t", max_entries=2, evict=evict)

    for key in "abc":
        cache.put(key, key.upper())

    assert list(cache) == ["b", "c"]
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, "B", "C")


@pytest.mark.parametrize(
    ("evict", "kept"),
    [
        pytest.param("oldest", ["b", "c"], id="oldest: a read moves nothing"),
        pytest.param("least_recent", ["a", "c"], id="least_recent: a read makes it recent"),
    ],
)
def test_what_goes_first__after_a_read(evict, kept):
    cache = BoundedCache("t", max_entries=2, evict=evict)
    cache.put("a", 1)
    cache.put("b", 2)

    cache.get("a")
    cache.put("c", 3)

    assert sorted(cache) == kept


def test_put_again__replaces_and_is_the_newest():
    cache = BoundedCache("t", max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)

    cache.put("a", 10)
    cache.put("c", 3)

    assert dict(cache) == {"a": 10, "c": 3}


def test_bound_in_bytes__oldest_go_until_the_new_value_fits():
    cache = BoundedCache("t", max_entries=10, max_bytes=10, size_of=len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")

    cache.put("c", b"123")

    assert list(cache) == ["b", "c"]
    assert cache.size == 7


def test_bound_in_bytes__a_value_put_again_counts_once():
    cache = BoundedCache("t", max_entries=10, max_bytes=10, size_of=len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")

    cache.put("b", b"123456")

    assert list(cache) == ["a", "b"]
    assert cache.size == 10


def test_bound_in_entries_beside_bytes():
    cache = BoundedCache("t", max_entries=2, max_bytes=100, size_of=len)

    for key in "abc":
        cache.put(key, b"x")

    assert list(cache) == ["b", "c"]
    assert cache.size == 2


def test_value_larger_than_the_bound__not_kept__nor_what_its_key_held():
    cache = BoundedCache("t", max_entries=10, max_bytes=10, size_of=len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")

    kept = cache.put("a", b"x" * 11)

    assert kept is False
    assert dict(cache) == {"b": b"1234"}
    assert cache.size == 4


def test_time_bound__found_until_max_age_after_the_put():
    clock = Clock()
    cache = BoundedCache("t", max_entries=10, max_age=lambda: 60, clock=clock)
    cache.put("a", 1)

    clock.now += 59.9
    within = cache.get("a")
    clock.now += 0.1

    assert (within, cache.get("a"), "a" in cache, list(cache)) == (1, None, False, [])


def test_time_bound__read_on_each_use():
    clock = Clock()
    max_age = [60.0]
    cache = BoundedCache("t", max_entries=10, max_age=lambda: max_age[0], clock=clock)
    cache.put("a", 1)
    clock.now += 10

    max_age[0] = 5.0

    assert cache.get("a") is None


def test_time_bound_of_zero__nothing_kept():
    cache = BoundedCache("t", max_entries=10, max_age=lambda: 0)

    assert cache.put("a", 1) is False
    assert len(cache) == 0


def test_time_bound_with_bytes__sizes_of_the_values():
    cache = BoundedCache("t", max_entries=10, max_bytes=8, size_of=len, max_age=lambda: 60)

    for key in "abc":
        cache.put(key, b"1234")

    assert list(cache) == ["b", "c"]
    assert cache.size == 8


def test_pop_and_del():
    cache = BoundedCache("t", max_entries=10)
    cache.put("a", 1)
    cache.put("b", 2)

    popped = (cache.pop("a"), cache.pop("a"), cache.pop("a", "none"))
    del cache["b"]

    assert popped == (1, None, "none")
    assert (len(cache), cache.size) == (0, 0)
    with pytest.raises(KeyError):
        del cache["b"]


@pytest.mark.parametrize(
    "bounds",
    [
        pytest.param({}, id="oldest"),
        pytest.param({"evict": "least_recent"}, id="least_recent"),
        pytest.param({"max_age": lambda: 60}, id="time bound"),
    ],
)
def test_reader__reads_as_get(bounds):
    cache = BoundedCache("t", max_entries=10, **bounds)
    cache.put("a", 1)
    cache.put("b", 2)
    read = cache.reader()

    cache.put("c", 3)

    assert [read(key) for key in ["b", "x", "a", "c"]] == [2, None, 1, 3]


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        pytest.param({"max_entries": 0}, "max_entries must be at least 1", id="no room"),
        pytest.param(
            {"max_entries": 1, "max_bytes": 10},
            "max_bytes and size_of go together",
            id="bytes without size_of",
        ),
        pytest.param(
            {"max_entries": 1, "size_of": len},
            "max_bytes and size_of go together",
            id="size_of without bytes",
        ),
    ],
)
def test_bounds_refused(bounds, message):
    with pytest.raises(ValueError, match=message):
        BoundedCache("t", **bounds)


@pytest.mark.parametrize("evict", ["oldest", "least_recent"])
def test_rebound__tighter__the_newest_that_fit_stay(evict):
    cache = BoundedCache("t", max_entries=10, max_bytes=100, size_of=len, evict=evict)
    for key, value in [("a", b"12345"), ("b", b"12"), ("c", b"1234"), ("d", b"1")]:
        cache.put(key, value)

    cache.rebound(max_entries=3, max_bytes=7)

    assert list(cache) == ["b", "c", "d"]
    assert (cache.size, cache.max_entries, cache.max_bytes) == (7, 3, 7)
    cache.put("e", b"12")
    assert list(cache) == ["c", "d", "e"]
    cache.put("f", b"1234567")
    assert list(cache) == ["f"]


def test_rebound__looser__everything_stays_and_more_fits():
    cache = BoundedCache("t", max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)

    cache.rebound(max_entries=3)
    cache.put("c", 3)

    assert dict(cache) == {"a": 1, "b": 2, "c": 3}


@pytest.mark.parametrize(
    ("bounds", "message"),
    [({"max_entries": 0}, "max_entries must be at least 1"), ({"max_bytes": 5}, "go together")],
)
def test_rebound__refused(bounds, message):
    cache = BoundedCache("t", max_entries=2)
    cache.put("a", 1)

    with pytest.raises(ValueError, match=message):
        cache.rebound(**bounds)

    assert (dict(cache), cache.max_entries) == ({"a": 1}, 2)


def test_named__the_one_cache_of_that_name():
    cache = BoundedCache("named once", max_entries=1)

    assert named("named once") is cache
    with pytest.raises(LookupError, match="0 caches named 'nobody'"):
        named("nobody")


def test_clear_all__every_cache_emptied():
    caches = [BoundedCache(name, max_entries=10) for name in ("one", "two")]
    for cache in caches:
        cache.put("a", 1)

    clear_all()

    assert [len(cache) for cache in caches] == [0, 0]
    assert all(cache in every_cache() for cache in caches)


def test_threads__bounds_hold_and_readers_never_miss_a_value_being_replaced():
    """Writers put and replace while readers read a key that is always held: the bound holds
    in entries and bytes, and no reader finds the held key missing."""
    cache = BoundedCache("t", max_entries=50, max_bytes=400, size_of=len)
    cache.put("held", b"12345678")
    stop = threading.Event()
    missed = []

    def write(number: int) -> None:
        for step in range(3000):
            cache.put(f"{number}-{step % 80}", b"x" * (step % 9))
            if step % 7 == 0:
                cache.put("held", b"12345678")

    def read() -> None:
        while not stop.is_set():
            if cache.get("held") is None:
                missed.append(1)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(number,)) for number in range(4)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()

    values = dict(cache)
    assert len(cache) <= 50
    assert cache.size == sum(len(value) for value in values.values()) <= 400
    assert missed == []


def caches_of_the_app() -> set[str]:
    """The names of the caches that the app's modules declare (module globals, in a dict of
    them, or held by a module global of one of the app's classes), once everything that serves
    a request is loaded."""
    get_resolver().url_patterns  # noqa: B018 (imports every view and what it uses)
    for package in sorted(APP_PACKAGES):  # and every other module, whatever ran before
        for module in pkgutil.walk_packages(
            importlib.import_module(package).__path__, prefix=f"{package}."
        ):
            entry_point = module.name.rsplit(".", 1)[-1] in ("__main__", "wsgi", "asgi")
            if ".migrations" not in module.name and not entry_point:
                importlib.import_module(module.name)
    names = set()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in APP_PACKAGES:
            continue
        for value in list(vars(module).values()):
            for candidate in value.values() if isinstance(value, dict) else [value]:
                if isinstance(candidate, BoundedCache):
                    names.add(candidate.name)
                elif is_app_object(candidate):
                    held = vars(candidate).values()
                    names.update(cache.name for cache in held if isinstance(cache, BoundedCache))
    return names


def is_app_object(value: object) -> bool:
    """An instance of one of the app's own classes (not a class, function or module)."""
    kind = type(value)
    return (
        kind.__module__.split(".")[0] in APP_PACKAGES
        and not isinstance(value, type | types.FunctionType | types.ModuleType)
        and hasattr(value, "__dict__")
    )


def test_design_page__declares_every_cache_of_the_app():
    """docs/caches.md has a row for each cache the app declares, and none for another."""
    declared = set(re.findall(r"^\| `([^`]+)` \|", DESIGN_PAGE.read_text(), flags=re.MULTILINE))

    assert caches_of_the_app() == declared
