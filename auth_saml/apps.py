from django.apps import AppConfig


class AuthSamlConfig(AppConfig):
    name = "auth_saml"
    default_auto_field = "django.db.models.BigAutoField"
