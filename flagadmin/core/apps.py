from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

from flagadmin.core.db import bound_waits


class FlagadminConfig(AppConfig):
    """The core domain: users, roles, API tokens, audit events. Its label stays `flagadmin`
    (tables, migrations, permissions and `AUTH_USER_MODEL = "flagadmin.User"` keep their names)."""

    name = "flagadmin.core"
    label = "flagadmin"
    verbose_name = "flagadmin core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_bootstrap_after_migrate, sender=self)
        connection_created.connect(bound_waits, dispatch_uid="flagadmin.db.bound_waits")

        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from flagadmin.core import signin

        user_login_failed.connect(signin.count_failed_password_sign_in)
        user_logged_in.connect(signin.reset_failed_sign_ins)


def _bootstrap_after_migrate(**kwargs) -> None:
    from flagadmin.core.bootstrap import bootstrap_api_tokens

    bootstrap_api_tokens()
