"""Logging filters named in settings.LOGGING (no Django imports: loaded while settings load)."""

import logging

from flagadmin.serving.stack import redact


class SkipServiceUnavailable(logging.Filter):
    """Drops django.request's record of a 503 response: the error handler has already written
    the one line that request deserves (with the error id), and Django's record would add a
    second one, with a traceback when the exception escaped a view."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "status_code", None) != 503


class RedactedSecrets(logging.Filter):
    """Each record's message without query strings or API token secrets: the app's own lines
    quote what a client sent (a 404's path, a project id), and a client may send a token there.
    The stack redacts every line it relays; `gunicorn flagadmin.wsgi` alone puts this filter on
    gunicorn's own loggers too (flagadmin/serving/gunicorn_hooks.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message.encode("utf-8", "surrogateescape")).decode(
            "utf-8", "surrogateescape"
        )
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True
