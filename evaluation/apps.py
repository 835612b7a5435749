from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Flags decided on the server, by Unleash's own engine (Yggdrasil) over the client payload:
    the playground and the Frontend API's evaluation. Above `client_api`, whose payload it reads."""

    name = "evaluation"
    default_auto_field = "django.db.models.BigAutoField"
