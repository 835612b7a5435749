"""The one kind of per-process cache: bounded, thread-safe, built on cachetools. Every value a
worker keeps between requests (client payload bodies, token lookups, engines, the projects
list's entries) is kept in one, declared with its bounds where it is used; the rule that makes a
kept value right (a revision, a version, an expiry) stays beside it. Every cache, its bounds and
why it is safe: docs/caches.md.

cachetools keeps the order, counts the sizes and chooses what goes; this adds what every cache
here needs:

- a lock around every change (an app server's worker threads share a process);
- reads outside the lock, one dictionary lookup, where a read moves nothing (`evict="oldest"`),
  and `reader()` for a whole list: the busiest reads (a 304, a projects list of 1,000 entries)
  cost what a dict costs;
- a bound in entries beside the one in bytes, and a time bound read on each use (a setting);
- `clear_all()`, which empties every cache of the process (the tests' fixture).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Literal, TypeVar

import cachetools

K = TypeVar("K")
V = TypeVar("V")

# "oldest": the entry put first goes first (a put again makes it the newest); reads move
# nothing. "least_recent": the entry read or put least recently goes first.
Eviction = Literal["oldest", "least_recent"]

_MISSING: Any = object()


def monotonic() -> float:
    """The time bound's default clock, read through `time` on each call (tests replace
    `time.monotonic`)."""
    return time.monotonic()


class _Forgetting:
    """A cachetools cache that names each key it evicts to `forget`: cachetools' own hook for
    that is `popitem`, which its `__setitem__` calls to make room."""

    def __init__(self, maxsize: int, getsizeof: Callable | None, forget: Callable) -> None:
        super().__init__(maxsize, getsizeof)
        self._forget = forget

    def popitem(self) -> tuple:
        key, value = super().popitem()
        self._forget(key)
        return key, value


class _OldestFirst(_Forgetting, cachetools.FIFOCache):
    pass


class _LeastRecentFirst(_Forgetting, cachetools.LRUCache):
    pass


_POLICIES = {"oldest": _OldestFirst, "least_recent": _LeastRecentFirst}
_every_cache: list[weakref.ref[BoundedCache]] = []
_registry_lock = threading.Lock()


class BoundedCache(MutableMapping[K, V]):
    """At most `max_entries` values, and with `size_of`, at most `max_bytes` of them (a value
    larger than that alone is not kept); with `max_age` (seconds, called on each use, so a
    setting changed in a test applies), a value is found only for that long after its put.
    What goes first when a bound is reached: `evict`. Thread-safe."""

    def __init__(
        self,
        name: str,
        *,
        max_entries: int,
        max_bytes: int | None = None,
        size_of: Callable[[V], int] | None = None,
        max_age: Callable[[], float] | None = None,
        evict: Eviction = "oldest",
        clock: Callable[[], float] = monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if (max_bytes is None) != (size_of is None):
            raise ValueError("max_bytes and size_of go together")
        self.name = name
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.evict = evict
        self._size_of = size_of
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        # What reads look in, always the same keys as the policy's: the value, or with a time
        # bound (kept at, value).
        self._values: dict[K, Any] = {}
        self._policy = self._new_policy()
        with _registry_lock:
            _every_cache.append(weakref.ref(self))

    def _new_policy(self) -> cachetools.Cache:
        getsizeof = None
        if self._size_of is not None:
            size_of = self._size_of
            getsizeof = (lambda kept: size_of(kept[1])) if self._max_age else size_of
        maxsize = self.max_entries if self.max_bytes is None else self.max_bytes
        values = self._values
        return _POLICIES[self.evict](maxsize, getsizeof, lambda key: values.pop(key, None))

    def __repr__(self) -> str:
        return f"<BoundedCache {self.name!r}: {len(self)} of {self.max_entries}>"

    def get(self, key: K, default: Any = None) -> Any:
        if self.evict == "oldest":
            kept = self._values.get(key, _MISSING)
        else:
            with self._lock:
                kept = self._policy.get(key, _MISSING)
        if kept is _MISSING:
            return default
        if self._max_age is None:
            return kept
        return kept[1] if self._clock() - kept[0] < self._max_age() else default

    def _fresh(self, kept: tuple[float, Any]) -> bool:
        return self._clock() - kept[0] < self._max_age()

    def reader(self) -> Callable[[K], V | None]:
        """A function of a key that reads as `get` does, for loops over a whole list: with
        `evict="oldest"` and no time bound, the dictionary's own lookup."""
        if self.evict == "oldest" and self._max_age is None:
            return self._values.get
        return self.get

    def put(self, key: K, value: V) -> bool:
        """Keep `value` under `key` as the newest entry, in place of what `key` held, making
        room by `evict`. False when it is not kept (nor what `key` held): larger than
        `max_bytes` alone, or a time bound of 0 or less."""
        with self._lock:
            if self._max_age is not None:
                max_age = self._max_age()
                kept: Any = (self._clock(), value)
            else:
                max_age, kept = None, value
            too_large = self._size_of is not None and self._size_of(value) > self.max_bytes
            if too_large or (max_age is not None and max_age <= 0):
                self._discard(key)
                return False
            # Out of the policy first: a value put again is the newest, and its old size does
            # not count against the room the new one needs. Readers meanwhile see the old one.
            self._policy.pop(key, None)
            if self.max_bytes is not None:
                while len(self._policy) >= self.max_entries:
                    self._policy.popitem()
            self._policy[key] = kept
            self._values[key] = kept
            return True

    def pop(self, key: K, default: Any = None) -> Any:
        """Forget `key`; the value it held when one would have been found, else `default`."""
        with self._lock:
            kept = self._values.get(key, _MISSING)
            self._discard(key)
        if kept is _MISSING or (self._max_age is not None and not self._fresh(kept)):
            return default
        return kept if self._max_age is None else kept[1]

    def _discard(self, key: K) -> None:
        self._policy.pop(key, None)
        self._values.pop(key, None)

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()
            self._policy = self._new_policy()

    def rebound(self, *, max_entries: int | None = None, max_bytes: int | None = None) -> None:
        """Apply new bounds (those not given stay), keeping the values that fit, the newest
        first: for an operator's setting read after start, and for tests of what goes."""
        with self._lock:
            if max_entries is not None:
                if max_entries < 1:
                    raise ValueError("max_entries must be at least 1")
                self.max_entries = max_entries
            if max_bytes is not None:
                if self._size_of is None:
                    raise ValueError("max_bytes and size_of go together")
                self.max_bytes = max_bytes
            kept = [(key, self._values[key]) for key in self._policy]
            self._values.clear()
            self._policy = self._new_policy()
            for key, stored in kept:  # oldest first, so the newest stay
                if self.max_bytes is not None:
                    if self._policy.getsizeof(stored) > self.max_bytes:
                        continue
                    while len(self._policy) >= self.max_entries:
                        self._policy.popitem()
                self._policy[key] = stored
                self._values[key] = stored

    @property
    def size(self) -> int:
        """What the values count against the bound: bytes with `size_of`, else entries."""
        return self._policy.currsize

    def __getitem__(self, key: K) -> V:
        found = self.get(key, _MISSING)
        if found is _MISSING:
            raise KeyError(key)
        return found

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        if self.pop(key, _MISSING) is _MISSING:
            raise KeyError(key)

    def __iter__(self) -> Iterator[K]:
        """The keys whose values would be found, in the order they were put, as they were when
        asked."""
        with self._lock:
            kept = [(key, self._values[key]) for key in self._policy]
        if self._max_age is None:
            return iter([key for key, _ in kept])
        return iter([key for key, timed in kept if self._fresh(timed)])

    def __len__(self) -> int:
        """The values kept, those past the time bound included until they are evicted."""
        return len(self._values)


def clear_all() -> None:
    """Empty every cache of this process (each is filled again as requests come)."""
    with _registry_lock:
        alive = [cache for ref in _every_cache if (cache := ref()) is not None]
        _every_cache[:] = [weakref.ref(cache) for cache in alive]
    for cache in alive:
        cache.clear()


def named(name: str) -> BoundedCache:
    """The cache of this process declared under `name` (docs/caches.md lists them)."""
    found = [cache for cache in every_cache() if cache.name == name]
    if len(found) != 1:
        raise LookupError(f"{len(found)} caches named {name!r}")
    return found[0]


def every_cache() -> list[BoundedCache]:
    """The caches of this process."""
    with _registry_lock:
        return [cache for ref in _every_cache if (cache := ref()) is not None]
