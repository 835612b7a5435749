"""glibc's thresholds for large buffers (flagadmin/memory.py; flagadmin/wsgi.py sets them)."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from flagadmin.memory import return_large_buffers


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


def test_return_large_buffers__threshold_in_environment__left_to_it(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")

    assert return_large_buffers() is False
