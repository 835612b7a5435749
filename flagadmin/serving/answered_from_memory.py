"""The few requests a worker answers from its memory, taken before Django's request handling.

Browsers ask `GET /api/frontend` on every page view and SDKs poll `GET /api/client/features`
every few seconds; a worker that looked the token up lately and holds the current state answers
both without the database (`frontend_api.middleware`, `client_api.middleware`). Through Django's
WSGI handler such an answer still pays for what it does not use: the `request_started` and
`request_finished` signals (each closing old connections and caches), the middleware in front
of those apps' and the response's closing. `AnsweredFromMemory` wraps the WSGI application and
hands these requests straight to the same apps' `answer_from_memory` functions, named by path in
the setting `ANSWERED_FROM_MEMORY`. What the skipped middleware does to such a request is done
here too: the client's address behind the local nginx, the Host check (a refused Host goes on to
Django, which refuses it). Whatever a function cannot answer from memory (it returns None, or
raises) goes on to Django unchanged, so the answer given is the one the whole stack gives, byte
for byte. Only `GET`: a body read here could not be read again there. Design and figures:
docs/answered-from-memory.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import request_finished
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from flagadmin.serving.client_address import address_from_local_proxy

Answerer = Callable[[HttpRequest], HttpResponse | None]


class _QueryCounter:
    """Counts the statements an answer ran (a database execute wrapper)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


class AnsweredFromMemory:
    def __init__(self, application: Callable, answerers: dict[str, Answerer] | None = None):
        self.application = application
        if answerers is None:
            # Each setting names a factory, called once here, after Django is set up.
            answerers = {
                path: import_string(dotted)()
                for path, dotted in settings.ANSWERED_FROM_MEMORY.items()
            }
        self.answerers = answerers

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        answerer = self.answerers.get(environ.get("PATH_INFO", ""))
        if answerer is not None and environ.get("REQUEST_METHOD") == "GET":
            response = self.answer(answerer, environ)
            if response is not None:
                start_response(
                    f"{response.status_code} {response.reason_phrase}", list(response.items())
                )
                return [response.content]
        return self.application(environ, start_response)

    @staticmethod
    def answer(answerer: Answerer, environ: dict[str, Any]) -> HttpResponse | None:
        request = WSGIRequest(environ)
        address_from_local_proxy(request.META)
        try:
            request.get_host()
        except DisallowedHost:
            return None
        counter = _QueryCounter()
        try:
            with connections["default"].execute_wrapper(counter):
                return answerer(request)
        except Exception:
            # Django answers it, as it answers any request (a database outage: 503).
            return None
        finally:
            if counter.count:
                # A state read from the database: the connection is looked after as at the end
                # of any request (closed when too old or broken).
                request_finished.send(sender=AnsweredFromMemory)
