"""Seed Unleash's fixed roles (Admin 1, Editor 2, Viewer 3, Owner 4, Member 5) and the two
system users that tokens act as (-42 admin token user, -1337 system)."""

from django.db import migrations

from flagadmin.core.permissions import SEEDED_ROLES


def seed(apps, schema_editor):
    Role = apps.get_model("flagadmin", "Role")
    User = apps.get_model("flagadmin", "User")
    for role_id, name, role_type, description, permissions in SEEDED_ROLES:
        Role.objects.update_or_create(
            id=role_id,
            defaults={
                "name": name,
                "type": role_type,
                "description": description,
                "permissions": permissions,
            },
        )
    for user_id, name, username in [
        (-42, "Unleash Admin Token User", "admin-token"),
        (-1337, "Unleash System", "unleash_system_user"),
    ]:
        User.objects.update_or_create(
            id=user_id,
            defaults={
                "name": name,
                "username": username,
                "account_type": "System",
                "password": "!",  # unusable: system users never sign in
                "root_role_id": 1 if user_id == -42 else None,
            },
        )
    if schema_editor.connection.vendor == "postgresql":
        # Explicit ids do not move PostgreSQL's sequence: start new roles after the seeded ones.
        schema_editor.execute(
            "SELECT setval(pg_get_serial_sequence('flagadmin_role', 'id'), "
            "GREATEST((SELECT MAX(id) FROM flagadmin_role), 1))"
        )


class Migration(migrations.Migration):
    dependencies = [("flagadmin", "0001_initial")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
