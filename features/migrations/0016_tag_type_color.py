from django.db import migrations, models


def seed_color(apps, schema_editor):
    # Unleash seeds its `simple` type with this colour.
    TagType = apps.get_model("features", "TagType")
    TagType.objects.filter(name="simple", color__isnull=True).update(color="#FFFFFF")


class Migration(migrations.Migration):
    dependencies = [("features", "0015_derived_data_declared")]

    operations = [
        migrations.AddField(
            model_name="tagtype",
            name="color",
            field=models.CharField(blank=True, max_length=7, null=True),
        ),
        migrations.RunPython(seed_color, migrations.RunPython.noop),
    ]
