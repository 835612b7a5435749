"""WSGI entry point: `gunicorn flagadmin.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")

application = get_wsgi_application()

from flagadmin.bootstrap import bootstrap_api_tokens  # noqa: E402  (needs Django set up)

bootstrap_api_tokens()
