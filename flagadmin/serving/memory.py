"""A worker's large buffers go back to the system when freed (glibc's malloc).

glibc serves an allocation of 128 KiB or more with its own mapping, unmapped when freed, but
raises that threshold to the size of each such block freed (up to 32 MiB): after the first
answer of a megabyte (a project's 2,000 flags, the projects list), every later one comes from
the heap, which keeps the freed pages. A worker then stays tens of MiB larger for good. A
fixed threshold keeps them mapped and given back (whole server during reads of 2,000 flags:
PSS 159-161 MiB against 183-196, `bench/versus_unleash.py`), for an mmap and munmap per large
buffer.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MMAP_THRESHOLD = 128 * 1024
# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _set_by_the_environment() -> bool:
    """Whether the operator tuned these thresholds (read by glibc at start)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return (
        "MALLOC_MMAP_THRESHOLD_" in os.environ
        or "MALLOC_TRIM_THRESHOLD_" in os.environ
        or "glibc.malloc.mmap_threshold" in tunables
        or "glibc.malloc.trim_threshold" in tunables
    )


def return_large_buffers() -> bool:
    """Fix glibc's thresholds for this process (and the processes it forks from now on); True
    when set. Not where malloc is not glibc's, nor when the environment tunes either threshold
    (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, `GLIBC_TUNABLES`): the operator's
    values stand."""
    if _set_by_the_environment():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None or not hasattr(libc, "gnu_get_libc_version"):
        return False
    # The heap's top is trimmed from twice the threshold, as glibc's own default pairs them.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)
    )
