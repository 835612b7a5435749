"""`features.ProjectFlagDay`: per project, the flags neither archived nor stale, by type and day
of creation (UTC).

The projects list computes again the entries of the projects written since its last read; their
potentially-stale counts need the flags younger than their type's lifetime. With these rows it
is a sum of at most 40 rows per lifetime, plus the flags of the cutoff's own day (see
`overview.project_figures`), whatever the number of young flags. Kept as `flag_counts` keeps
its table: one upsert per row moved, under that row's lock.
"""

from flagadmin.core.derived.schema import Derived, Function, Trigger

POSTGRESQL_FUNCTIONS = (
    Function("""CREATE OR REPLACE FUNCTION features_flag_day_change()
RETURNS trigger LANGUAGE plpgsql AS $$
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
END $$"""),
)
POSTGRESQL_TRIGGERS = (
    Trigger("""CREATE TRIGGER features_flag_day_insert AFTER INSERT ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_day_change()"""),
    Trigger("""CREATE TRIGGER features_flag_day_delete AFTER DELETE ON features_feature
  FOR EACH ROW EXECUTE FUNCTION features_flag_day_change()"""),
    Trigger("""CREATE TRIGGER features_flag_day_update
  AFTER UPDATE OF project_id, type, stale, archived_at, created_at ON features_feature
  FOR EACH ROW WHEN (
    OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.type IS DISTINCT FROM NEW.type
    OR OLD.stale IS DISTINCT FROM NEW.stale
    OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)
    OR OLD.created_at IS DISTINCT FROM NEW.created_at)
  EXECUTE FUNCTION features_flag_day_change()"""),
)
POSTGRESQL_STORAGE = ("ALTER TABLE features_projectflagday SET (fillfactor = 50)",)

# SQLite keeps datetimes as text in UTC ("2026-11-23 19:02:48.123456"): date() is its day.
# The delete never inserts (a flush may delete flags after this table: see `flag_activity`).
_SQLITE_SUBTRACT = """
  UPDATE features_projectflagday SET total = total - 1
   WHERE OLD.archived_at IS NULL AND NOT OLD.stale
     AND project_id = OLD.project_id AND type = OLD.type AND day = date(OLD.created_at);"""
_SQLITE_ADD = """
  INSERT INTO features_projectflagday (project_id, type, day, total)
  SELECT NEW.project_id, NEW.type, date(NEW.created_at), 1
   WHERE NEW.archived_at IS NULL AND NOT NEW.stale
  ON CONFLICT (project_id, type, day) DO UPDATE SET total = total + 1;"""
SQLITE_TRIGGERS = (
    Trigger(
        "CREATE TRIGGER features_flag_day_insert AFTER INSERT ON features_feature BEGIN"
        f"{_SQLITE_ADD}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_flag_day_delete AFTER DELETE ON features_feature BEGIN"
        f"{_SQLITE_SUBTRACT}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER features_flag_day_update"
        " AFTER UPDATE OF project_id, type, stale, archived_at, created_at ON features_feature"
        " WHEN OLD.project_id IS NOT NEW.project_id OR OLD.type IS NOT NEW.type"
        " OR OLD.stale IS NOT NEW.stale OR (OLD.archived_at IS NULL) <> (NEW.archived_at IS NULL)"
        " OR OLD.created_at IS NOT NEW.created_at"
        f" BEGIN{_SQLITE_SUBTRACT}{_SQLITE_ADD}\nEND"
    ),
)

FLAG_DAYS = Derived(
    tables=("features.ProjectFlagDay",),
    app="features",
    keeps="flags neither archived nor stale, by project, type and day of creation (UTC)",
    recount="features.project_stats.repair",
    postgresql_functions=POSTGRESQL_FUNCTIONS,
    postgresql_triggers=POSTGRESQL_TRIGGERS,
    postgresql_storage=POSTGRESQL_STORAGE,
    sqlite_triggers=SQLITE_TRIGGERS,
)
