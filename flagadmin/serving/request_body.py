"""Every request's body read to its end before the answer goes out.

A view that refuses a request before reading its body (a token refused, say) leaves the rest
of a large body unread in the app server's socket (seen with gunicorn; kept for any server that
closes a connection so); when it then closes the connection, the kernel resets it, and nginx,
still reading, loses the answer: a 502 instead of the view's 400. Reading what is left (nginx
has bounded the body already) keeps the answer whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

CHUNK = 64 * 1024


class BodyReadToTheEnd:
    def __init__(self, application: Callable) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        result = self.application(environ, start_response)
        stream = environ.get("wsgi.input")
        if stream is not None and environ.get("CONTENT_LENGTH") not in (None, "", "0"):
            try:
                while stream.read(CHUNK):
                    pass
            except (OSError, ValueError):
                pass  # the client went away: nothing to answer
        return result
