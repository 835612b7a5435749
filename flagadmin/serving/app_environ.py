"""Each request's WSGI environ as the stack's nginx sent it, for the stack's app server
(flagadmin/serving/app_server.py), which only that nginx reaches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


class EnvironAsNginxSentIt:
    """Two things granian does otherwise than gunicorn, put right before the app runs:

    - It starts every environ from the process's environment variables (CGI's habit), which
      here hold the settings: the secret key and the database URL would be in every
      `request.META`, and a variable such as HTTP_PROXY would pose as a request header. Each is
      removed where it holds the process's value (a request's own headers and CGI variables have
      other names).
    - It passes only the decoded path. The path as sent (`REQUEST_URI`, which
      flagadmin/api/middleware.py reads to tell an encoded slash from a separator) comes in
      nginx's `X-Request-URI`, which it sets on every request, replacing any a client sent.
    """

    def __init__(self, application: Callable, process_environment: Mapping[str, str]) -> None:
        self.application = application
        self.process_environment = tuple(process_environment.items())

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        for key, value in self.process_environment:
            if environ.get(key) == value:
                del environ[key]
        request_uri = environ.pop("HTTP_X_REQUEST_URI", None)
        if request_uri is not None:
            environ["REQUEST_URI"] = request_uri
        return self.application(environ, start_response)
