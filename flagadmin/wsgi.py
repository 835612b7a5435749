"""WSGI entry point: `gunicorn flagadmin.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

from flagadmin.serving.memory import return_large_buffers

# Before the app loads; with --preload in gunicorn's master, whose workers inherit it.
return_large_buffers()

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")

application = get_wsgi_application()

from flagadmin.serving.answered_from_memory import AnsweredFromMemory  # noqa: E402
from flagadmin.serving.request_body import BodyReadToTheEnd  # noqa: E402

application = BodyReadToTheEnd(AnsweredFromMemory(application))

from flagadmin.core.bootstrap import bootstrap_api_tokens  # noqa: E402  (needs Django set up)

bootstrap_api_tokens()

# With --preload this runs in gunicorn's master, whose workers are forked from it: a connection
# opened here would be shared by all of them (gunicorn.conf.py closes it too, where it is read).
from django.db import connections  # noqa: E402

connections.close_all()
