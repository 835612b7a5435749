from django.apps import AppConfig


class GroupsConfig(AppConfig):
    name = "groups"
    default_auto_field = "django.db.models.BigAutoField"
    # The admin's index heading ("Groups" twice, app and model, read as two kinds of group).
    verbose_name = "User groups"
