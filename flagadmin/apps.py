from django.apps import AppConfig
from django.db.models.signals import post_migrate


class FlagadminConfig(AppConfig):
    name = "flagadmin"
    verbose_name = "flagadmin core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from flagadmin import schema  # noqa: F401  (registers the OpenAPI auth extension)

        post_migrate.connect(_bootstrap_after_migrate, sender=self)
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from flagadmin import signin

        user_login_failed.connect(signin.count_failed_password_sign_in)
        user_logged_in.connect(signin.reset_failed_sign_ins)


def _bootstrap_after_migrate(**kwargs) -> None:
    from flagadmin.bootstrap import bootstrap_api_tokens

    bootstrap_api_tokens()
