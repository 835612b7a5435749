"""Running the same work in real threads at the same instant, for the concurrency tests.

Each thread has its own database connection (Django's connections are per thread), so the tests
that use this need `django_db(transaction=True)`: the threads must see each other's commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

# Each test sees the seeded rows (serialized_rollback) and the threads see each other's commits.
concurrent_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def run_together(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run `work(index)` in `count` threads released at the same instant; return the results
    (or the exceptions) in thread order."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as exc:  # reported by the assertions, not lost in the thread
            results[index] = exc
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
