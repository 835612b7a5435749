"""`features.ProjectFlagCount`: per project, the flags that are not archived, by type and stale
state (the projects list's `featureCount`, `staleFeatureCount`, `health`).

What a flag row contributes: one to (project, type, stale) while it is not archived. Each
trigger changes one counter row with an atomic upsert under that row's lock, so concurrent
writers, in any process or app instance, cannot lose an update. (Triggers rather than calls in
each service: the counts must follow every write of a flag, including those no service makes:
the Django admin, a queryset `update()`, a data migration.)
"""

from flagadmin.core.derived.schema import Derived, Function, Trigger

POSTGRESQL_FUNCTIONS = (
    Function("""CREATE OR REPLACE FUNCTION features_flag_count_change()
RETURNS trigger LANGUAGE plpgsql AS $$
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
END $$"""),
)
POSTGRESQL_TRIGGERS = (
    Trigger("""CREATE TRIGGER features_flag_count_insert AFTER INSERT ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_count_change()"""),
    Trigger("""CREATE TRIGGER features_flag_count_delete AFTER DELETE ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_count_change()"""),
    Trigger("""CREATE TRIGGER features_flag_count_update
  AFTER UPDATE OF project_id, type, stale, archived_at ON features_feature
  FOR EACH ROW WHEN (
    OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.type IS DISTINCT FROM NEW.type
    OR OLD.stale IS DISTINCT FROM NEW.stale
    OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL))
  EXECUTE FUNCTION features_flag_count_change()"""),
)
# Room in each page for the new version of an updated counter row (a HOT update: no index
# entry, pruned in place), so that a table of a few thousand rows updated all day stays small.
POSTGRESQL_STORAGE = ("ALTER TABLE features_projectflagcount SET (fillfactor = 50)",)

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
SQLITE_TRIGGERS = (
    Trigger(
        "CREATE TRIGGER features_flag_count_insert AFTER INSERT ON features_feature BEGIN"
        f"{_SQLITE_ADD}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_flag_count_delete AFTER DELETE ON features_feature BEGIN"
        f"{_SQLITE_SUBTRACT}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_flag_count_update"
        " AFTER UPDATE OF project_id, type, stale, archived_at ON features_feature"
        " WHEN OLD.project_id IS NOT NEW.project_id OR OLD.type IS NOT NEW.type"
        " OR OLD.stale IS NOT NEW.stale OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)"
        f" BEGIN{_SQLITE_SUBTRACT}{_SQLITE_ADD}\nEND"
    ),
)

FLAG_COUNTS = Derived(
    tables=("features.ProjectFlagCount",),
    app="features",
    keeps="flags not archived, by project, type and stale state",
    recount="features.project_stats.repair",
    postgresql_functions=POSTGRESQL_FUNCTIONS,
    postgresql_triggers=POSTGRESQL_TRIGGERS,
    postgresql_storage=POSTGRESQL_STORAGE,
    sqlite_triggers=SQLITE_TRIGGERS,
)
