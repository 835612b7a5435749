"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")

application = get_asgi_application()

from flagadmin.core.bootstrap import bootstrap_api_tokens  # noqa: E402  (needs Django set up)

bootstrap_api_tokens()
