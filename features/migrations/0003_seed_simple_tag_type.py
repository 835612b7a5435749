from django.db import migrations


def seed(apps, schema_editor):
    TagType = apps.get_model("features", "TagType")
    TagType.objects.get_or_create(
        name="simple",
        defaults={"description": "Used to simplify filtering of features", "icon": "#"},
    )


def unseed(apps, schema_editor):
    # Only the seeded type; tag types added since are the operators' own.
    TagType = apps.get_model("features", "TagType")
    TagType.objects.filter(name="simple", tags__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("features", "0002_tags_strategies_lifecycle_dependencies")]

    operations = [migrations.RunPython(seed, unseed)]
