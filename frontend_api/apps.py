from django.apps import AppConfig


class FrontendApiConfig(AppConfig):
    """Unleash's Frontend API (`/api/frontend`) for browser and mobile apps: the enabled flags for
    a context, decided by `evaluation`, with frontend tokens and CORS."""

    name = "frontend_api"
    default_auto_field = "django.db.models.BigAutoField"
