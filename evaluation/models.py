"""No tables: the playground's admin page needs a model to be listed in the Django admin's index,
and this one is never stored (`managed = False`)."""

from django.db import models


class Playground(models.Model):
    """The admin's playground page (evaluation.admin.PlaygroundAdmin): every flag decided for a
    context, with why."""

    class Meta:
        managed = False
        verbose_name = "playground"
        verbose_name_plural = "playground"
        default_permissions = ("view",)

    def __str__(self) -> str:
        return "playground"
