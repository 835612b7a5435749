"""Real threads for concurrency tests, each with its own database connection."""

from __future__ import annotations

import threading

from django.db import connection


def run_together(count: int, work) -> list:
    """`work(index)` in `count` threads released at once; the results (or exceptions)."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as exc:  # reported by the assertions, not lost in the thread
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
