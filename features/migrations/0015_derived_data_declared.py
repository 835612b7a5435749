"""The features app's triggers as `flagadmin.core.derived` declares them (flag counts, day counts,
activity, the flag side of the list versions), applied again idempotently: functions by CREATE
OR REPLACE, triggers dropped if they exist and created again. On a database migrated through
0007-0013 it changes nothing; from here on the declaration, not the replay of migrations, says
which triggers are in force.

When the declaration changes, add a migration like this one: it makes the change, and this one
reapplies the newest text on a new database.
"""

from django.db import migrations

from flagadmin.core.derived import applier


class Migration(migrations.Migration):
    dependencies = [
        ("features", "0014_fix_stored_variant_weights"),
        # The flag side's triggers run the projects app's functions.
        ("projects", "0005_derived_data_declared"),
    ]

    operations = [
        migrations.RunPython(applier("features"), migrations.RunPython.noop, elidable=False)
    ]
