"""On PostgreSQL, the triggers that advance a project's activity row (migration 0008) fire after
those that keep its counts and day counts (0007, 0012).

PostgreSQL fires the triggers of one event in the order of their names, and
`features_flag_activity_*` sorted before `features_flag_count_*` and `features_flag_day_*`:
creating a flag whose name has audit events already (deleted, then created again) locked the
activity row before the count row, while every other writer of a flag locks its count, its day
count, then the activity row (the audit event comes last). Two such writers could each hold a
row the other waits for: a deadlock. Renamed, they fire last. SQLite locks no rows: nothing
to change there.
"""

from django.db import migrations

RENAMES = [
    ("features_flag_activity_insert", "features_flag_then_activity_insert"),
    ("features_flag_activity_update", "features_flag_then_activity_update"),
    ("features_flag_activity_delete", "features_flag_then_activity_delete"),
]


def rename(pairs: list[tuple[str, str]]):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for old, new in pairs:
            schema_editor.execute(f"ALTER TRIGGER {old} ON features_feature RENAME TO {new}")

    return run


class Migration(migrations.Migration):
    dependencies = [("features", "0012_project_flag_days")]

    operations = [
        migrations.RunPython(
            rename(RENAMES),
            rename([(new, old) for old, new in RENAMES]),
            elidable=False,
        ),
    ]
