from django.apps import AppConfig


class AuthSamlConfig(AppConfig):
    name = "auth_saml"
    verbose_name = "SAML 2.0 sign-in"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the OpenAPI extension of `samlSettingsSchema` and the system check.
        from auth_saml import checks, schema  # noqa: F401
