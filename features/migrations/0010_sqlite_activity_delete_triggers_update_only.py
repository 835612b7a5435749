"""SQLite: the activity triggers that run when a flag or an audit event is deleted only update a
project's existing activity row; they no longer create one.

Creating it there re-inserted a row for a project whose activity row had just been deleted in
the same transaction (a flush, which deletes table by table in no fixed order): the project's
own deletion then broke the row's foreign key at commit. A deleted flag or event never needs a
new row: the project got one when its first flag or event was written. PostgreSQL empties
tables with TRUNCATE, which fires no row triggers, and is left as it is.
"""

from importlib import import_module

from django.db import migrations

# The statements that compute a project's activity, as migration 0008 wrote them.
activity = import_module("features.migrations.0008_project_flag_activity")


def sqlite_update(project: str) -> str:
    return f"""
  UPDATE features_projectflagactivity
     SET last_flag_event_at = {activity.newest_flag_event(project)},
         last_flag_seen_at = {activity.newest_usage(project)}
   WHERE project_id = {project};"""

TRIGGERS = {
    "features_flag_activity_delete": ("features_feature", "OLD.project_id", ""),
    "features_event_activity_delete": (
        "flagadmin_auditevent",
        "OLD.project",
        " WHEN OLD.feature_name IS NOT NULL AND OLD.project IS NOT NULL",
    ),
}


def _update_only(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for name, (table, project, when) in TRIGGERS.items():
        schema_editor.execute(f"DROP TRIGGER {name}")
        schema_editor.execute(
            f"CREATE TRIGGER {name} AFTER DELETE ON {table}{when}"
            f" BEGIN{sqlite_update(project)}\nEND"
        )


def _insert_and_update(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for name, (table, project, when) in TRIGGERS.items():
        schema_editor.execute(f"DROP TRIGGER {name}")
        schema_editor.execute(
            f"CREATE TRIGGER {name} AFTER DELETE ON {table}{when}"
            f" BEGIN{activity.sqlite_recompute(project)}\nEND"
        )


class Migration(migrations.Migration):
    dependencies = [("features", "0009_client_usage_and_instances")]

    operations = [migrations.RunPython(_update_only, _insert_and_update)]
