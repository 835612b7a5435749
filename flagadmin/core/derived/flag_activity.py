"""`features.ProjectFlagActivity`: per project, the newest audit event about one of its flags and
the newest usage of its flags (`last_seen_at`).

The hot paths move a time forward with one atomic upsert (`GREATEST`): a new event about a flag
of the project, a newer usage. The rare paths that can move it back (a flag deleted or moved, a
usage time set earlier or cleared, an event deleted or changed) recompute the project's times:
on PostgreSQL after locking the project's row, so that the recomputation reads, with a fresh
snapshot, every writer that held the row before it (READ COMMITTED).

On PostgreSQL the triggers of one event fire in the order of their names: those on flags are
named `features_flag_then_activity_*` so that they fire after those of the counts and day
counts, and every writer of a flag locks its count, its day count, then the activity row (see
docs/lock-order.md).
"""

from flagadmin.core.derived.schema import Derived, Function, Trigger


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


POSTGRESQL_FUNCTIONS = (
    Function(f"""CREATE OR REPLACE FUNCTION features_activity_recompute(pid varchar)
RETURNS void LANGUAGE plpgsql AS $$
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
END $$"""),
    Function("""CREATE OR REPLACE FUNCTION features_activity_advance(pid varchar,
                                                     event_at timestamptz,
                                                     seen_at timestamptz)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO features_projectflagactivity AS a
         (project_id, last_flag_event_at, last_flag_seen_at)
  VALUES (pid, event_at, seen_at)
  ON CONFLICT (project_id) DO UPDATE
     SET last_flag_event_at = GREATEST(a.last_flag_event_at, EXCLUDED.last_flag_event_at),
         last_flag_seen_at = GREATEST(a.last_flag_seen_at, EXCLUDED.last_flag_seen_at)
$$"""),
    Function("""CREATE OR REPLACE FUNCTION features_flag_activity_change()
RETURNS trigger LANGUAGE plpgsql AS $$
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
END $$"""),
    Function("""CREATE OR REPLACE FUNCTION features_event_activity_change()
RETURNS trigger LANGUAGE plpgsql AS $$
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
END $$"""),
)
POSTGRESQL_TRIGGERS = (
    Trigger("""CREATE TRIGGER features_flag_then_activity_insert AFTER INSERT ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_activity_change()"""),
    Trigger("""CREATE TRIGGER features_flag_then_activity_delete AFTER DELETE ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_activity_change()"""),
    Trigger("""CREATE TRIGGER features_flag_then_activity_update
  AFTER UPDATE OF project_id, name, last_seen_at ON features_feature
  FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id
    OR OLD.name IS DISTINCT FROM NEW.name OR OLD.last_seen_at IS DISTINCT FROM NEW.last_seen_at)
  EXECUTE FUNCTION features_flag_activity_change()"""),
    Trigger("""CREATE TRIGGER features_event_activity_insert AFTER INSERT ON flagadmin_auditevent
  FOR EACH ROW WHEN (NEW.feature_name IS NOT NULL AND NEW.project IS NOT NULL)
  EXECUTE FUNCTION features_event_activity_change()"""),
    Trigger("""CREATE TRIGGER features_event_activity_delete AFTER DELETE ON flagadmin_auditevent
  FOR EACH ROW WHEN (OLD.feature_name IS NOT NULL AND OLD.project IS NOT NULL)
  EXECUTE FUNCTION features_event_activity_change()"""),
    Trigger("""CREATE TRIGGER features_event_activity_update
  AFTER UPDATE OF project, feature_name, created_at ON flagadmin_auditevent
  FOR EACH ROW EXECUTE FUNCTION features_event_activity_change()"""),
)
POSTGRESQL_STORAGE = ("ALTER TABLE features_projectflagactivity SET (fillfactor = 50)",)


def sqlite_recompute(project: str) -> str:
    """SQLite has no functions, and runs one writer at a time: every trigger recomputes."""
    return f"""
  INSERT OR IGNORE INTO features_projectflagactivity (project_id)
  SELECT id FROM projects_project WHERE id = {project};
  UPDATE features_projectflagactivity
     SET last_flag_event_at = {newest_flag_event(project)},
         last_flag_seen_at = {newest_usage(project)}
   WHERE project_id = {project};"""


def sqlite_update(project: str) -> str:
    """For deletes: only an existing row is updated. Creating it re-inserted a row for a project
    whose activity row had just been deleted in the same transaction (a flush, which deletes
    table by table in no fixed order), and the project's own deletion then broke the row's
    foreign key at commit. (PostgreSQL empties tables with TRUNCATE, which fires no row
    triggers.)"""
    return f"""
  UPDATE features_projectflagactivity
     SET last_flag_event_at = {newest_flag_event(project)},
         last_flag_seen_at = {newest_usage(project)}
   WHERE project_id = {project};"""


SQLITE_TRIGGERS = (
    Trigger(
        "CREATE TRIGGER features_flag_activity_insert AFTER INSERT ON features_feature"
        f" BEGIN{sqlite_recompute('NEW.project_id')}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_flag_activity_delete AFTER DELETE ON features_feature"
        f" BEGIN{sqlite_update('OLD.project_id')}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_flag_activity_update"
        " AFTER UPDATE OF project_id, name, last_seen_at ON features_feature"
        f" BEGIN{sqlite_recompute('OLD.project_id')}{sqlite_recompute('NEW.project_id')}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_event_activity_insert AFTER INSERT ON flagadmin_auditevent"
        " WHEN NEW.feature_name IS NOT NULL AND NEW.project IS NOT NULL"
        f" BEGIN{sqlite_recompute('NEW.project')}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_event_activity_delete AFTER DELETE ON flagadmin_auditevent"
        " WHEN OLD.feature_name IS NOT NULL AND OLD.project IS NOT NULL"
        f" BEGIN{sqlite_update('OLD.project')}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_event_activity_update"
        " AFTER UPDATE OF project, feature_name, created_at ON flagadmin_auditevent"
        f" BEGIN{sqlite_recompute('OLD.project')}{sqlite_recompute('NEW.project')}\nEND"
    ),
)

FLAG_ACTIVITY = Derived(
    tables=("features.ProjectFlagActivity",),
    app="features",
    keeps="per project, the newest event about one of its flags and the newest usage of them",
    recount="features.project_stats.repair",
    postgresql_functions=POSTGRESQL_FUNCTIONS,
    postgresql_triggers=POSTGRESQL_TRIGGERS,
    postgresql_storage=POSTGRESQL_STORAGE,
    sqlite_triggers=SQLITE_TRIGGERS,
)
