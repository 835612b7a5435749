"""The projects app's triggers as `flagadmin.core.derived` declares them (members, member counts,
list versions), applied again idempotently: functions by CREATE OR REPLACE, triggers dropped if
they exist and created again. On a database migrated through 0003 and 0004 it changes nothing;
from here on the declaration, not the replay of migrations, says which triggers are in force.

When the declaration changes, add a migration like this one: it makes the change, and this one
reapplies the newest text on a new database.
"""

from django.db import migrations

from flagadmin.core.derived import applier


class Migration(migrations.Migration):
    dependencies = [("projects", "0004_project_list_versions")]

    operations = [
        migrations.RunPython(applier("projects"), migrations.RunPython.noop, elidable=False)
    ]
