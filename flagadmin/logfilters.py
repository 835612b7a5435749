"""Logging filters named in settings.LOGGING (no Django imports: loaded while settings load)."""

import logging


class SkipServiceUnavailable(logging.Filter):
    """Drops django.request's record of a 503 response: the error handler has already written
    the one line that request deserves (with the error id), and Django's record would add a
    second one, with a traceback when the exception escaped a view."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "status_code", None) != 503
