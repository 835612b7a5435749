"""WSGI entry point: `gunicorn flagadmin.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

from flagadmin.serving.memory import return_large_buffers

# Before the app loads; where the app is loaded before workers are forked (the stack's granian,
# gunicorn --preload), they inherit it.
return_large_buffers()

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")

application = get_wsgi_application()

from flagadmin.serving.answered_from_memory import AnsweredFromMemory  # noqa: E402
from flagadmin.serving.request_body import BodyReadToTheEnd  # noqa: E402

application = BodyReadToTheEnd(AnsweredFromMemory(application))

from flagadmin.core.bootstrap import bootstrap_api_tokens  # noqa: E402  (needs Django set up)

bootstrap_api_tokens()

# Where the app is loaded before workers are forked (flagadmin/serving/app_server.py, gunicorn
# --preload), a connection opened here would be shared by all of them.
from django.db import connections  # noqa: E402

connections.close_all()
