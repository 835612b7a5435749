"""glibc's thresholds for large buffers (flagadmin/serving/memory.py; flagadmin/wsgi.py sets
them)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flagadmin.serving.memory import return_large_buffers


def _is_glibc() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    return hasattr(libc, "gnu_get_libc_version")


glibc_only = pytest.mark.skipif(not _is_glibc(), reason="glibc's malloc")


@glibc_only
def test_return_large_buffers__glibc__thresholds_set(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)

    assert return_large_buffers() is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MALLOC_MMAP_THRESHOLD_", "65536"),
        ("MALLOC_TRIM_THRESHOLD_", "65536"),
        ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536"),
        ("GLIBC_TUNABLES", "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=65536"),
    ],
)
def test_return_large_buffers__tuned_by_the_environment__left_to_it(monkeypatch, name, value):
    monkeypatch.setenv(name, value)

    assert return_large_buffers() is False


# Run in a fresh interpreter: in a long-lived one the heap may hold a free chunk that fits the
# 200 KiB, which malloc then reuses whatever the threshold.
_MAPPED_GROWTH = """
import ctypes, ctypes.util, sys
from flagadmin.serving.memory import return_large_buffers

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd",
        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "set" and not return_large_buffers():
    raise SystemExit("not set")
libc.free(libc.malloc(4 * 1024 * 1024))
before = libc.mallinfo2().hblkhd
buffer = libc.malloc(200 * 1024)
print(libc.mallinfo2().hblkhd - before)
libc.free(buffer)
"""


def _mapped_growth(mode: str) -> int:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
    }
    done = subprocess.run(
        [sys.executable, "-c", _MAPPED_GROWTH, mode],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    return int(done.stdout)


@glibc_only
def test_return_large_buffers__a_buffer_of_200_kib__mapped_even_after_a_larger_one_freed():
    # Left to itself, glibc raises its threshold to 4 MiB at that free, and serves the
    # 200 KiB from the heap, which keeps the pages (the control run shows it).
    assert _mapped_growth("leave") == 0
    assert _mapped_growth("set") >= 200 * 1024
