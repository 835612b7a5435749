"""The Editor (2), Owner (4) and Member (5) roles manage a project's client tokens, as
Unleash's do (READ_, CREATE_ and DELETE_PROJECT_API_TOKEN); databases seeded before those
permissions existed get them."""

from django.db import migrations

PERMISSIONS = ["READ_PROJECT_API_TOKEN", "CREATE_PROJECT_API_TOKEN", "DELETE_PROJECT_API_TOKEN"]
ROLE_IDS = [2, 4, 5]


def grant(apps, schema_editor):
    Role = apps.get_model("flagadmin", "Role")
    for role in Role.objects.filter(id__in=ROLE_IDS):
        missing = [p for p in PERMISSIONS if p not in role.permissions]
        if missing:
            role.permissions = [*role.permissions, *missing]
            role.save(update_fields=["permissions"])


def revoke(apps, schema_editor):
    Role = apps.get_model("flagadmin", "Role")
    for role in Role.objects.filter(id__in=ROLE_IDS):
        role.permissions = [p for p in role.permissions if p not in PERMISSIONS]
        role.save(update_fields=["permissions"])


class Migration(migrations.Migration):
    dependencies = [("flagadmin", "0007_editor_segment_permissions")]

    operations = [migrations.RunPython(grant, revoke)]
