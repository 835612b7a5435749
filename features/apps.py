from django.apps import AppConfig


class FeaturesConfig(AppConfig):
    name = "features"
    default_auto_field = "django.db.models.BigAutoField"
