from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

from flagadmin.db import bound_waits


class FlagadminConfig(AppConfig):
    name = "flagadmin"
    verbose_name = "flagadmin core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from flagadmin import schema  # noqa: F401  (registers the OpenAPI auth extension)

        post_migrate.connect(_bootstrap_after_migrate, sender=self)
        connection_created.connect(bound_waits, dispatch_uid="flagadmin.db.bound_waits")


def _bootstrap_after_migrate(**kwargs) -> None:
    from flagadmin.bootstrap import bootstrap_api_tokens

    bootstrap_api_tokens()
