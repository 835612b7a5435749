"""Yggdrasil's C interface, as the `yggdrasil-engine` package ships it (`libyggdrasilffi`), bound
for the calls flagadmin makes: an engine per state, and per flag either `check_enabled` or
`check_variant`, with the context encoded once by the caller. The package's Python wrapper
(`UnleashEngine`) encodes the context for every flag and asks a second time for impression data:
four times the engine's own cost (docs/evaluation.md)."""

from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path
from typing import Any

import orjson
import yggdrasil_engine

logger = logging.getLogger("evaluation.engine")


class EngineError(RuntimeError):
    """The engine refused a question (a context it cannot read)."""


def _library() -> ctypes.CDLL:
    folder = Path(yggdrasil_engine.__file__).resolve().parent / "lib"
    library = ctypes.CDLL(str(next(folder.glob("*yggdrasilffi.*"))))
    library.new_engine.argtypes = []
    library.new_engine.restype = ctypes.c_void_p
    library.free_engine.argtypes = [ctypes.c_void_p]
    library.free_engine.restype = None
    library.take_state.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    library.take_state.restype = ctypes.c_void_p
    for question in (library.check_enabled, library.check_variant):
        question.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        question.restype = ctypes.c_void_p
    library.free_response.argtypes = [ctypes.c_void_p]
    library.free_response.restype = None
    return library


_lib = _library()
# Results of custom strategies: flagadmin serves only built-in ones, so none.
_NO_CUSTOM_RESULTS = b"{}"


def _raw_answer(pointer: int) -> bytes:
    """The library's JSON answer at `pointer` (`{status_code, value, error_message}`), freed."""
    try:
        return ctypes.string_at(pointer)
    finally:
        _lib.free_response(pointer)


def answer_value(answer: bytes) -> Any:
    """The `value` of an answer; None for a flag the engine does not know."""
    found = orjson.loads(answer)
    status = found["status_code"]
    if status == "Ok":
        return found["value"]
    if status == "NotFound":
        return None
    raise EngineError(found["error_message"])


class Engine:
    """One Yggdrasil engine holding one state (a client payload: `{"features": [...],
    "segments"?: [...]}`), never changed after it is built; freed with the object. Calls take
    `lock`: the library hands each of them a mutable reference to the engine."""

    def __init__(self, state: bytes) -> None:
        self.pointer = _lib.new_engine()
        self.lock = threading.Lock()
        found = orjson.loads(_raw_answer(_lib.take_state(self.pointer, state)))
        if found["status_code"] != "Ok":
            # Warnings about single rules (a constraint it cannot compile) leave every other
            # flag in the state; the engine decides the flag with that rule as off.
            logger.warning("yggdrasil took a state with: %s", found["error_message"])

    def __del__(self) -> None:
        pointer, self.pointer = getattr(self, "pointer", None), None
        if pointer:
            _lib.free_engine(pointer)

    def variant(self, name: bytes, context: bytes) -> bytes:
        """The engine's answer about a flag's variant, as it writes it: `value` is `{name,
        enabled, featureEnabled, payload?}`, `featureEnabled` being the flag's `isEnabled`."""
        return _raw_answer(_lib.check_variant(self.pointer, name, context, _NO_CUSTOM_RESULTS))

    def enabled(self, name: bytes, context: bytes) -> bool | None:
        """Whether the flag is enabled for the context; None for a flag it does not know."""
        answer = _raw_answer(_lib.check_enabled(self.pointer, name, context, _NO_CUSTOM_RESULTS))
        return answer_value(answer)
