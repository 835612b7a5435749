"""Per-project counts of the flags created each day (UTC) that are neither archived nor stale,
kept by the database as migration 0007 keeps `ProjectFlagCount`: the table, the triggers that
change it in the same transaction as every write of a flag row, and the counts of the flags
already there.

The projects list computes again the entries of the projects written since its last read;
their potentially-stale counts need the flags younger than their type's lifetime, which were
counted one by one (a project receiving flags all day has thousands of them: 5-10 ms a read,
growing). With these rows it is a sum of at most 40 rows per lifetime, plus the flags of the
cutoff's own day (see `overview.project_figures`).
"""

import django.db.models.deletion
from django.db import migrations, models

# What a flag row contributes: one to (project, type, day of creation) while it is neither
# archived nor stale.
POSTGRESQL_TRIGGERS = """
ALTER TABLE features_projectflagday SET (fillfactor = 50);
CREATE FUNCTION features_flag_day_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  new_counts boolean := COALESCE(TG_OP <> 'DELETE' AND NEW.archived_at IS NULL
    AND NOT NEW.stale, false);
  old_counts boolean := COALESCE(TG_OP <> 'INSERT' AND OLD.archived_at IS NULL
    AND NOT OLD.stale, false);
  new_day date;
  old_day date;
  add_first boolean;
BEGIN
  IF new_counts THEN
    new_day := (NEW.created_at AT TIME ZONE 'UTC')::date;
  END IF;
  IF old_counts THEN
    old_day := (OLD.created_at AT TIME ZONE 'UTC')::date;
  END IF;
  -- A move between two rows locks them in key order (as migration 0007): no deadlock between
  -- two writers moving flags in opposite directions.
  add_first := COALESCE(new_counts AND old_counts
    AND (NEW.project_id, NEW.type, new_day) < (OLD.project_id, OLD.type, old_day), false);
  IF add_first THEN
    INSERT INTO features_projectflagday (project_id, type, day, total)
    VALUES (NEW.project_id, NEW.type, new_day, 1)
    ON CONFLICT (project_id, type, day)
    DO UPDATE SET total = features_projectflagday.total + 1;
  END IF;
  IF old_counts THEN
    UPDATE features_projectflagday SET total = total - 1
     WHERE project_id = OLD.project_id AND type = OLD.type AND day = old_day;
  END IF;
  IF new_counts AND NOT add_first THEN
    INSERT INTO features_projectflagday (project_id, type, day, total)
    VALUES (NEW.project_id, NEW.type, new_day, 1)
    ON CONFLICT (project_id, type, day)
    DO UPDATE SET total = features_projectflagday.total + 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER features_flag_day_insert AFTER INSERT ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_day_change();
CREATE TRIGGER features_flag_day_delete AFTER DELETE ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_day_change();
CREATE TRIGGER features_flag_day_update
  AFTER UPDATE OF project_id, type, stale, archived_at, created_at ON features_feature
  FOR EACH ROW WHEN (
    OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.type IS DISTINCT FROM NEW.type
    OR OLD.stale IS DISTINCT FROM NEW.stale
    OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)
    OR OLD.created_at IS DISTINCT FROM NEW.created_at)
  EXECUTE FUNCTION features_flag_day_change();
"""
POSTGRESQL_DROP = """
DROP TRIGGER features_flag_day_update ON features_feature;
DROP TRIGGER features_flag_day_delete ON features_feature;
DROP TRIGGER features_flag_day_insert ON features_feature;
DROP FUNCTION features_flag_day_change();
"""

# SQLite keeps datetimes as text in UTC ("2026-11-23 19:02:48.123456"): date() is its day.
# The delete never inserts (see migration 0010: a flush may delete flags after this table).
_SQLITE_SUBTRACT = """
  UPDATE features_projectflagday SET total = total - 1
   WHERE OLD.archived_at IS NULL AND NOT OLD.stale
     AND project_id = OLD.project_id AND type = OLD.type AND day = date(OLD.created_at);"""
_SQLITE_ADD = """
  INSERT INTO features_projectflagday (project_id, type, day, total)
  SELECT NEW.project_id, NEW.type, date(NEW.created_at), 1
   WHERE NEW.archived_at IS NULL AND NOT NEW.stale
  ON CONFLICT (project_id, type, day) DO UPDATE SET total = total + 1;"""
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER features_flag_day_insert AFTER INSERT ON features_feature BEGIN"
    f"{_SQLITE_ADD}\nEND",
    f"CREATE TRIGGER features_flag_day_delete AFTER DELETE ON features_feature BEGIN"
    f"{_SQLITE_SUBTRACT}\nEND",
    "CREATE TRIGGER features_flag_day_update"
    " AFTER UPDATE OF project_id, type, stale, archived_at, created_at ON features_feature"
    " WHEN OLD.project_id IS NOT NEW.project_id OR OLD.type IS NOT NEW.type"
    " OR OLD.stale IS NOT NEW.stale OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)"
    " OR OLD.created_at IS NOT NEW.created_at"
    f" BEGIN{_SQLITE_SUBTRACT}{_SQLITE_ADD}\nEND",
]
SQLITE_DROP = [
    "DROP TRIGGER features_flag_day_update",
    "DROP TRIGGER features_flag_day_delete",
    "DROP TRIGGER features_flag_day_insert",
]

# Taken after the triggers exist: creating a trigger locks the flags' table against writes
# until this migration commits, so none is missed or counted twice.
BACKFILL = """
INSERT INTO features_projectflagday (project_id, type, day, total)
SELECT project_id, type, {day}, COUNT(*) FROM features_feature
 WHERE archived_at IS NULL AND NOT stale
 GROUP BY project_id, type, {day}
"""


def install_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_TRIGGERS)
        schema_editor.execute(BACKFILL.format(day="(created_at AT TIME ZONE 'UTC')::date"))
    else:
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement)
        schema_editor.execute(BACKFILL.format(day="date(created_at)"))


def drop_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_DROP)
    else:
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    schema_editor.execute("DELETE FROM features_projectflagday")


class Migration(migrations.Migration):
    dependencies = [
        ("features", "0011_project_list_versions"),
        ("projects", "0004_project_list_versions"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProjectFlagDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("type", models.CharField(max_length=32)),
                ("day", models.DateField()),
                ("total", models.BigIntegerField(default=0)),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="flag_days",
                        to="projects.project",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "type", "day"), name="project_flag_day_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(install_triggers, drop_triggers, elidable=False),
    ]
