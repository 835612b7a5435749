from django.apps import AppConfig


class DefinitionsConfig(AppConfig):
    """What flag rules can name: the context fields (`/api/admin/context`) and the strategy
    definitions (`/api/admin/strategies`), built-in and custom. Below `features`, whose
    strategies and constraints name them."""

    name = "definitions"
    default_auto_field = "django.db.models.BigAutoField"
