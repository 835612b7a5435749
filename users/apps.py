from django.apps import AppConfig


class UsersConfig(AppConfig):
    """People: the user-admin API, their Django admin and the one writer of each user event. The
    `User` model itself is the core's (`flagadmin.core.models`, `AUTH_USER_MODEL`)."""

    name = "users"
    default_auto_field = "django.db.models.BigAutoField"
