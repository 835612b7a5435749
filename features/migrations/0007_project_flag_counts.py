"""Per-project flag counts kept by the database: the table, the triggers that keep it in the same
transaction as every write of a flag row, and the counts of the flags already there.

Triggers rather than calls in each service: the counts must follow every write of a flag,
including those no service makes (the Django admin, a queryset `update()`, a data migration,
a write added later by someone who does not know the counts exist). Each trigger changes one
counter row with an atomic upsert under that row's lock, so concurrent writers, in any process
or app instance, cannot lose an update.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# What a flag row contributes: one to (project, type, stale) while it is not archived.
POSTGRESQL_TRIGGERS = """
-- Room in each page for the new version of an updated counter row (a HOT update: no index
-- entry, pruned in place), so that a table of a few thousand rows updated all day stays small.
ALTER TABLE features_projectflagcount SET (fillfactor = 50);
CREATE FUNCTION features_flag_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- A move between two counter rows locks them in key order, so that two writers moving
  -- flags in opposite directions (stale and back) never wait on each other: no deadlock.
  add_first boolean := COALESCE(TG_OP = 'UPDATE'
    AND (NEW.project_id, NEW.type, NEW.stale) < (OLD.project_id, OLD.type, OLD.stale), false);
BEGIN
  IF add_first AND NEW.archived_at IS NULL THEN
    INSERT INTO features_projectflagcount (project_id, type, stale, total)
    VALUES (NEW.project_id, NEW.type, NEW.stale, 1)
    ON CONFLICT (project_id, type, stale)
    DO UPDATE SET total = features_projectflagcount.total + 1;
  END IF;
  IF TG_OP <> 'INSERT' AND OLD.archived_at IS NULL THEN
    UPDATE features_projectflagcount SET total = total - 1
     WHERE project_id = OLD.project_id AND type = OLD.type AND stale = OLD.stale;
  END IF;
  IF NOT add_first AND TG_OP <> 'DELETE' AND NEW.archived_at IS NULL THEN
    INSERT INTO features_projectflagcount (project_id, type, stale, total)
    VALUES (NEW.project_id, NEW.type, NEW.stale, 1)
    ON CONFLICT (project_id, type, stale)
    DO UPDATE SET total = features_projectflagcount.total + 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER features_flag_count_insert AFTER INSERT ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_count_change();
CREATE TRIGGER features_flag_count_delete AFTER DELETE ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_count_change();
CREATE TRIGGER features_flag_count_update
  AFTER UPDATE OF project_id, type, stale, archived_at ON features_feature
  FOR EACH ROW WHEN (
    OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.type IS DISTINCT FROM NEW.type
    OR OLD.stale IS DISTINCT FROM NEW.stale
    OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL))
  EXECUTE FUNCTION features_flag_count_change();
"""
POSTGRESQL_DROP = """
DROP TRIGGER features_flag_count_update ON features_feature;
DROP TRIGGER features_flag_count_delete ON features_feature;
DROP TRIGGER features_flag_count_insert ON features_feature;
DROP FUNCTION features_flag_count_change();
"""

# SQLite has no trigger functions: the same two steps in each trigger. Each statement of a
# trigger body runs once per row; SQLite serialises writers, so there is no race to lose.
_SQLITE_SUBTRACT = """
  UPDATE features_projectflagcount SET total = total - 1
   WHERE OLD.archived_at IS NULL
     AND project_id = OLD.project_id AND type = OLD.type AND stale = OLD.stale;"""
_SQLITE_ADD = """
  INSERT INTO features_projectflagcount (project_id, type, stale, total)
  SELECT NEW.project_id, NEW.type, NEW.stale, 1 WHERE NEW.archived_at IS NULL
  ON CONFLICT (project_id, type, stale) DO UPDATE SET total = total + 1;"""
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER features_flag_count_insert AFTER INSERT ON features_feature BEGIN"
    f"{_SQLITE_ADD}\nEND",
    f"CREATE TRIGGER features_flag_count_delete AFTER DELETE ON features_feature BEGIN"
    f"{_SQLITE_SUBTRACT}\nEND",
    "CREATE TRIGGER features_flag_count_update"
    " AFTER UPDATE OF project_id, type, stale, archived_at ON features_feature"
    " WHEN OLD.project_id IS NOT NEW.project_id OR OLD.type IS NOT NEW.type"
    " OR OLD.stale IS NOT NEW.stale OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)"
    f" BEGIN{_SQLITE_SUBTRACT}{_SQLITE_ADD}\nEND",
]
SQLITE_DROP = [
    "DROP TRIGGER features_flag_count_update",
    "DROP TRIGGER features_flag_count_delete",
    "DROP TRIGGER features_flag_count_insert",
]

# The counts of the flags already there, taken after the triggers exist: creating a trigger
# locks the table against writes until this migration commits, so none is missed or counted
# twice.
BACKFILL = """
INSERT INTO features_projectflagcount (project_id, type, stale, total)
SELECT project_id, type, stale, COUNT(*) FROM features_feature
 WHERE archived_at IS NULL
 GROUP BY project_id, type, stale
"""


def install_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_TRIGGERS)
    else:
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement)
    schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_DROP)
    else:
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    schema_editor.execute("DELETE FROM features_projectflagcount")


class Migration(migrations.Migration):
    dependencies = [
        ("features", "0006_read_model_indexes"),
        ("projects", "0002_seed_default_project"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ProjectFlagCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("type", models.CharField(max_length=32)),
                ("stale", models.BooleanField()),
                ("total", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.AddIndex(
            model_name="feature",
            index=models.Index(
                condition=models.Q(("archived_at__isnull", True), ("stale", False)),
                fields=["type", "created_at", "project"],
                name="feature_fresh",
            ),
        ),
        migrations.AddField(
            model_name="projectflagcount",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="flag_counts",
                to="projects.project",
            ),
        ),
        migrations.AddConstraint(
            model_name="projectflagcount",
            constraint=models.UniqueConstraint(
                fields=("project", "type", "stale"), name="project_flag_count_unique"
            ),
        ),
        migrations.RunPython(install_triggers, drop_triggers, elidable=False),
    ]
