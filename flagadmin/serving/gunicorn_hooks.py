"""What gunicorn.conf.py installs in gunicorn, for every way the project starts it (`gunicorn
flagadmin.wsgi` alone, scripts/serve --dev, the stack): its own refusals (a request line or
headers over its limits, malformed HTTP) in the API's error body, `{id, name, message}`, where
gunicorn writes an HTML page; and its log lines without query strings or token secrets (its
access log quotes request lines, its warnings the lines it refused). Behind the stack's nginx,
which refuses such requests itself and whose output the stack redacts, gunicorn seldom gets one.
Standard library and gunicorn only: this loads in gunicorn's master, before Django."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import uuid
from http import HTTPStatus

from gunicorn import util

from flagadmin.logfilters import RedactedSecrets
from flagadmin.serving.stack import PROXY_ERRORS

# Status -> (name, message), as nginx answers the same refusals; other statuses: by their class.
GUNICORN_ERRORS = {
    400: PROXY_ERRORS[400],
    403: ("NoAccessError", "The request was refused."),
    417: ("ValidationError", "The Expect header is not supported: send the body without it."),
    431: PROXY_ERRORS[494],
    500: PROXY_ERRORS[500],
    # Not nginx's message: gunicorn alone takes no chunked body either (the app answers 411).
    501: (
        "ValidationError",
        "This Transfer-Encoding is not supported: send the body with Content-Length.",
    ),
}
TOO_LONG = PROXY_ERRORS[494]


def error_body(status: int, reason: str, detail: str) -> bytes:
    """The body for gunicorn's `status`; `detail` is gunicorn's own message, which may quote
    the request (a credential in its query string) and is never sent."""
    if status == 400 and detail.startswith("Request Line is too large"):
        name, message = TOO_LONG
    else:
        default = ("ValidationError" if status < 500 else "InternalError", f"{reason}.")
        name, message = GUNICORN_ERRORS.get(status, default)
    body = {"id": str(uuid.uuid4()), "name": name, "message": message}
    return json.dumps(body, separators=(",", ":")).encode()


def write_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn.util.write_error, with the error body instead of an HTML page."""
    body = error_body(status_int, reason, mesg)
    # gunicorn keeps "Bad Request" as the reason of its 501 for an unknown transfer coding.
    with contextlib.suppress(ValueError):
        reason = HTTPStatus(status_int).phrase
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def install() -> None:
    """Into gunicorn's master (its workers are forked from it): the error body, the redaction
    of gunicorn's error and access logs."""
    util.write_error = write_error
    for name in ("gunicorn.error", "gunicorn.access"):
        log = logging.getLogger(name)
        # Once: gunicorn reads its configuration again on SIGHUP.
        if not any(isinstance(f, RedactedSecrets) for f in log.filters):
            log.addFilter(RedactedSecrets())
