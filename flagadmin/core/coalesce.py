"""Request coalescing: threads of one process that ask for the same expensive read at the same
time share one computation of it, and never one that began before they asked.

Per key, one computation runs at a time. A caller that finds a computation running joins the
batch waiting behind it (or opens that batch); when the running one ends, the batch closes
and one computation serves everyone in it. Everyone in a batch asked before its computation
began, so each gets an answer read after its own request arrived: a write that committed
before a request came in is always in the answer, exactly as if the request had computed its
own. What it saves is the other computations: under N concurrent readers, one runs instead of
N, and the CPU they would have taken stays free for the writes beside them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Batch(Generic[T]):
    """The callers that share one computation, and its outcome once it ends."""

    __slots__ = ("after", "done", "failed", "result")

    def __init__(self, after: _Batch[T] | None) -> None:
        self.after = after  # the batch computing before this one, if any
        self.done = threading.Event()
        self.failed = False
        self.result: T | None = None


class Coalescer(Generic[T]):
    """Shares one computation per key among the threads that ask for it at once (see the
    module's docstring). Keys are whatever decides the answer (the caller's favorites, a
    query parameter); `compute` must return the same thing for every caller of its key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Per key: the batch still taking callers (its computation has not begun), and the
        # newest batch, open or computing, which the next batch waits for.
        self._open: dict[Hashable, _Batch[T]] = {}
        self._newest: dict[Hashable, _Batch[T]] = {}

    def in_flight(self) -> int:
        """The keys with a computation running or callers waiting: 0 once all have returned
        (nothing is kept between calls)."""
        with self._lock:
            return len(self._open.keys() | self._newest.keys())

    def run(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`'s result, computed by this thread or by the batch it joined. When the
        batch's computation raises, its leader gets the exception and every other member
        computes for itself (an error is not shared: a member may yet succeed)."""
        with self._lock:
            batch = self._open.get(key)
            leads = batch is None
            if leads:
                batch = self._open[key] = self._newest[key] = _Batch(self._newest.get(key))
        if not leads:
            batch.done.wait()
            return compute() if batch.failed else batch.result  # type: ignore[return-value]
        try:
            if batch.after is not None:
                batch.after.done.wait()
            with self._lock:
                # Closed: whoever asks from now on waits for the next batch, whose computation
                # begins after this one's.
                del self._open[key]
            batch.after = None  # nothing more to wait for; lets the previous batch be freed
            batch.result = compute()
        except BaseException:
            # Also when interrupted while waiting: the batch must not stay open with nobody
            # to compute it.
            batch.failed = True
            with self._lock:
                if self._open.get(key) is batch:
                    del self._open[key]
            raise
        finally:
            batch.done.set()
            with self._lock:
                if self._newest.get(key) is batch:
                    del self._newest[key]
        return batch.result
