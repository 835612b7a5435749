"""When each project's flags were last changed (audit events) and last used (`last_seen_at`),
kept by the database like the counts of migration 0007.

The hot paths move a time forward with one atomic upsert (`GREATEST`): a new event about a flag
of the project, a newer usage. The rare paths that can move it back (a flag deleted or moved, a
usage time set earlier or cleared, an event deleted or changed) recompute the project's times:
on PostgreSQL after locking the project's row, so that the recomputation reads, with a fresh
snapshot, every writer that held the row before it (READ COMMITTED).
"""

import django.db.models.deletion
from django.db import migrations, models


def newest_flag_event(project: str) -> str:
    """The newest event about a flag that is in the project: walked newest first through
    `audit_flag_event_newest`; `OFFSET 0` keeps the check a probe per event."""
    return f"""(SELECT e.created_at FROM flagadmin_auditevent e
      WHERE e.project = {project} AND e.feature_name IS NOT NULL
        AND EXISTS (SELECT 1 FROM features_feature f
                     WHERE f.name = e.feature_name AND f.project_id = e.project
                     LIMIT 1 OFFSET 0)
      ORDER BY e.created_at DESC LIMIT 1)"""


def newest_usage(project: str) -> str:
    return f"""(SELECT MAX(f.last_seen_at) FROM features_feature f
      WHERE f.project_id = {project} AND f.last_seen_at IS NOT NULL)"""


POSTGRESQL = f"""
-- Room for HOT updates, as for the counts (migration 0007).
ALTER TABLE features_projectflagactivity SET (fillfactor = 50);
CREATE FUNCTION features_activity_recompute(pid varchar) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF pid IS NULL OR NOT EXISTS (SELECT 1 FROM projects_project WHERE id = pid) THEN
    RETURN;
  END IF;
  INSERT INTO features_projectflagactivity (project_id) VALUES (pid) ON CONFLICT DO NOTHING;
  PERFORM 1 FROM features_projectflagactivity WHERE project_id = pid FOR UPDATE;
  UPDATE features_projectflagactivity
     SET last_flag_event_at = {newest_flag_event("pid")},
         last_flag_seen_at = {newest_usage("pid")}
   WHERE project_id = pid;
END $$;

CREATE FUNCTION features_activity_advance(pid varchar, event_at timestamptz,
                                          seen_at timestamptz)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO features_projectflagactivity AS a
         (project_id, last_flag_event_at, last_flag_seen_at)
  VALUES (pid, event_at, seen_at)
  ON CONFLICT (project_id) DO UPDATE
     SET last_flag_event_at = GREATEST(a.last_flag_event_at, EXCLUDED.last_flag_event_at),
         last_flag_seen_at = GREATEST(a.last_flag_seen_at, EXCLUDED.last_flag_seen_at)
$$;

CREATE FUNCTION features_flag_activity_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_at timestamptz;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT MAX(e.created_at) INTO event_at FROM flagadmin_auditevent e
     WHERE e.feature_name = NEW.name AND e.project = NEW.project_id;
    IF event_at IS NOT NULL OR NEW.last_seen_at IS NOT NULL THEN
      PERFORM features_activity_advance(NEW.project_id, event_at, NEW.last_seen_at);
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM features_activity_recompute(OLD.project_id);
  ELSIF OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.name IS DISTINCT FROM NEW.name THEN
    -- Two projects, locked in key order: two opposite moves never deadlock.
    PERFORM features_activity_recompute(LEAST(OLD.project_id, NEW.project_id));
    IF OLD.project_id IS DISTINCT FROM NEW.project_id THEN
      PERFORM features_activity_recompute(GREATEST(OLD.project_id, NEW.project_id));
    END IF;
  ELSIF OLD.last_seen_at IS NULL OR NEW.last_seen_at >= OLD.last_seen_at THEN
    PERFORM features_activity_advance(NEW.project_id, NULL, NEW.last_seen_at);
  ELSE
    PERFORM features_activity_recompute(NEW.project_id);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER features_flag_activity_insert AFTER INSERT ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_activity_change();
CREATE TRIGGER features_flag_activity_delete AFTER DELETE ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_activity_change();
CREATE TRIGGER features_flag_activity_update
  AFTER UPDATE OF project_id, name, last_seen_at ON features_feature
  FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id
    OR OLD.name IS DISTINCT FROM NEW.name OR OLD.last_seen_at IS DISTINCT FROM NEW.last_seen_at)
  EXECUTE FUNCTION features_flag_activity_change();

CREATE FUNCTION features_event_activity_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF EXISTS (SELECT 1 FROM features_feature f
                WHERE f.name = NEW.feature_name AND f.project_id = NEW.project) THEN
      PERFORM features_activity_advance(NEW.project, NEW.created_at, NULL);
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM features_activity_recompute(OLD.project);
  ELSE
    PERFORM features_activity_recompute(LEAST(OLD.project, NEW.project));
    IF OLD.project IS DISTINCT FROM NEW.project THEN
      PERFORM features_activity_recompute(GREATEST(OLD.project, NEW.project));
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER features_event_activity_insert AFTER INSERT ON flagadmin_auditevent
  FOR EACH ROW WHEN (NEW.feature_name IS NOT NULL AND NEW.project IS NOT NULL)
  EXECUTE FUNCTION features_event_activity_change();
CREATE TRIGGER features_event_activity_delete AFTER DELETE ON flagadmin_auditevent
  FOR EACH ROW WHEN (OLD.feature_name IS NOT NULL AND OLD.project IS NOT NULL)
  EXECUTE FUNCTION features_event_activity_change();
CREATE TRIGGER features_event_activity_update
  AFTER UPDATE OF project, feature_name, created_at ON flagadmin_auditevent
  FOR EACH ROW EXECUTE FUNCTION features_event_activity_change();
"""

POSTGRESQL_DROP = """
DROP TRIGGER features_event_activity_update ON flagadmin_auditevent;
DROP TRIGGER features_event_activity_delete ON flagadmin_auditevent;
DROP TRIGGER features_event_activity_insert ON flagadmin_auditevent;
DROP FUNCTION features_event_activity_change();
DROP TRIGGER features_flag_activity_update ON features_feature;
DROP TRIGGER features_flag_activity_delete ON features_feature;
DROP TRIGGER features_flag_activity_insert ON features_feature;
DROP FUNCTION features_flag_activity_change();
DROP FUNCTION features_activity_advance(varchar, timestamptz, timestamptz);
DROP FUNCTION features_activity_recompute(varchar);
"""


def sqlite_recompute(project: str) -> str:
    """SQLite has no functions, and runs one writer at a time: every trigger recomputes."""
    return f"""
  INSERT OR IGNORE INTO features_projectflagactivity (project_id)
  SELECT id FROM projects_project WHERE id = {project};
  UPDATE features_projectflagactivity
     SET last_flag_event_at = {newest_flag_event(project)},
         last_flag_seen_at = {newest_usage(project)}
   WHERE project_id = {project};"""


SQLITE = [
    "CREATE TRIGGER features_flag_activity_insert AFTER INSERT ON features_feature"
    f" BEGIN{sqlite_recompute('NEW.project_id')}\nEND",
    "CREATE TRIGGER features_flag_activity_delete AFTER DELETE ON features_feature"
    f" BEGIN{sqlite_recompute('OLD.project_id')}\nEND",
    "CREATE TRIGGER features_flag_activity_update"
    " AFTER UPDATE OF project_id, name, last_seen_at ON features_feature"
    f" BEGIN{sqlite_recompute('OLD.project_id')}{sqlite_recompute('NEW.project_id')}\nEND",
    "CREATE TRIGGER features_event_activity_insert AFTER INSERT ON flagadmin_auditevent"
    " WHEN NEW.feature_name IS NOT NULL AND NEW.project IS NOT NULL"
    f" BEGIN{sqlite_recompute('NEW.project')}\nEND",
    "CREATE TRIGGER features_event_activity_delete AFTER DELETE ON flagadmin_auditevent"
    " WHEN OLD.feature_name IS NOT NULL AND OLD.project IS NOT NULL"
    f" BEGIN{sqlite_recompute('OLD.project')}\nEND",
    "CREATE TRIGGER features_event_activity_update"
    " AFTER UPDATE OF project, feature_name, created_at ON flagadmin_auditevent"
    f" BEGIN{sqlite_recompute('OLD.project')}{sqlite_recompute('NEW.project')}\nEND",
]
SQLITE_DROP = [
    f"DROP TRIGGER {name}"
    for name in [
        "features_event_activity_update",
        "features_event_activity_delete",
        "features_event_activity_insert",
        "features_flag_activity_update",
        "features_flag_activity_delete",
        "features_flag_activity_insert",
    ]
]

# After the triggers exist, which lock both tables against writes until this migration commits.
BACKFILL = f"""
INSERT INTO features_projectflagactivity (project_id, last_flag_event_at, last_flag_seen_at)
SELECT p.id, {newest_flag_event("p.id")}, {newest_usage("p.id")} FROM projects_project p
"""


def install_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
    else:
        for statement in SQLITE:
            schema_editor.execute(statement)
    schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_DROP)
    else:
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    schema_editor.execute("DELETE FROM features_projectflagactivity")


class Migration(migrations.Migration):
    dependencies = [
        ("features", "0007_project_flag_counts"),
        ("projects", "0002_seed_default_project"),
        ("flagadmin", "0004_read_model_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProjectFlagActivity",
            fields=[
                (
                    "project",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="flag_activity",
                        serialize=False,
                        to="projects.project",
                    ),
                ),
                ("last_flag_event_at", models.DateTimeField(blank=True, null=True)),
                ("last_flag_seen_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "verbose_name_plural": "project flag activity",
            },
        ),
        migrations.RunPython(install_triggers, drop_triggers, elidable=False),
    ]
