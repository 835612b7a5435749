"""A fresh instance has project `default` (name `Default`) with environments `development`
and `production`, as Unleash."""

from django.db import migrations


def seed(apps, schema_editor):
    Environment = apps.get_model("projects", "Environment")
    Project = apps.get_model("projects", "Project")
    ProjectEnvironment = apps.get_model("projects", "ProjectEnvironment")
    development, _ = Environment.objects.get_or_create(
        name="development", defaults={"type": "development", "sort_order": 100}
    )
    production, _ = Environment.objects.get_or_create(
        name="production", defaults={"type": "production", "sort_order": 200}
    )
    project, _ = Project.objects.get_or_create(
        id="default", defaults={"name": "Default", "description": "Default project"}
    )
    for environment in (development, production):
        ProjectEnvironment.objects.get_or_create(project=project, environment=environment)


class Migration(migrations.Migration):
    dependencies = [("projects", "0001_initial")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
