"""Variants stored before their weights were fixed as Unleash fixes them (`features.variants`):
fixed now, once, in the order they were sent (the order they were stored in). A list Unleash
would have refused (no `variable` variant, fix weights over 1000) is left as it is."""

from django.core.exceptions import ValidationError
from django.db import migrations


def fix_stored_weights(apps, schema_editor):
    from features.variants import fix_variant_weights

    for model_name in ("FeatureStrategy", "FeatureEnvironment"):
        model = apps.get_model("features", model_name)
        for row in model.objects.exclude(variants=[]).only("pk", "variants").iterator():
            if not isinstance(row.variants, list):
                continue
            try:
                fixed = fix_variant_weights(row.variants)
            except (ValidationError, KeyError, TypeError):
                continue
            if fixed != row.variants:
                model.objects.filter(pk=row.pk).update(variants=fixed)


class Migration(migrations.Migration):
    dependencies = [("features", "0013_activity_triggers_fire_last")]

    operations = [migrations.RunPython(fix_stored_weights, migrations.RunPython.noop)]
