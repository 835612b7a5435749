from django.apps import AppConfig


class OverviewConfig(AppConfig):
    """Projects and environments as the API and the Django admin show them, with their flag
    figures. Above `features` and `projects`, which it reads; nothing imports it."""

    name = "overview"
    default_auto_field = "django.db.models.BigAutoField"
