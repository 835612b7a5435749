"""The Editor role (id 2) manages segments, as Unleash's Editor does (CREATE_SEGMENT,
UPDATE_SEGMENT, DELETE_SEGMENT); databases seeded before those permissions existed get them."""

from django.db import migrations

SEGMENT_PERMISSIONS = ["CREATE_SEGMENT", "UPDATE_SEGMENT", "DELETE_SEGMENT"]


def grant(apps, schema_editor):
    Role = apps.get_model("flagadmin", "Role")
    editor = Role.objects.filter(id=2).first()
    if editor is not None:
        missing = [p for p in SEGMENT_PERMISSIONS if p not in editor.permissions]
        if missing:
            editor.permissions = [*editor.permissions, *missing]
            editor.save(update_fields=["permissions"])


def revoke(apps, schema_editor):
    Role = apps.get_model("flagadmin", "Role")
    editor = Role.objects.filter(id=2).first()
    if editor is not None:
        editor.permissions = [p for p in editor.permissions if p not in SEGMENT_PERMISSIONS]
        editor.save(update_fields=["permissions"])


class Migration(migrations.Migration):
    dependencies = [("flagadmin", "0006_drop_audit_project_feature")]

    operations = [migrations.RunPython(grant, revoke)]
