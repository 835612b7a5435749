"""`projects.ProjectListVersion`: a random version per project, drawn anew whenever the project's
entry in the projects list may change (docs/projects-list.md).

Two sets of triggers draw it: those on what the projects app owns (the project's row, its member
count, its Owner assignments (role 4), and the names of users and groups, which any entry's
owners may show: a change of one draws the version of the row `OWNER_NAMES` (''), which every
entry depends on), applied by the projects app's migrations; and those on the flag figures (the
kept counts and activity, whatever flag write or event moved them, and a flag's creation time,
which no count shows but the potentially-stale count depends on), applied by the features app's.

On PostgreSQL the row triggers only mark the projects (a transaction-local list in the setting
`flagadmin.list_versions_pending`); at commit the first of the deferred triggers draws every
marked project's version, locking their rows in key order. Version rows are thus locked last
in a write, after every row the write itself locks, and always in the same order: two writers
never wait for each other on them.
"""

from flagadmin.core.derived.schema import Derived, Function, Trigger

OWNER = 4  # Role.OWNER: the owners the list shows
OWNER_NAMES = ""  # the version of every user's and group's name (no project has this id)

PENDING = "'flagadmin.list_versions_pending'"
PENDING_LIST = f"COALESCE(NULLIF(current_setting({PENDING}, true), ''), '{{}}')::text[]"

POSTGRESQL_FUNCTIONS = (
    Function(f"""CREATE OR REPLACE FUNCTION projects_list_version_mark(pid varchar)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  pending text[] := {PENDING_LIST};
BEGIN
  IF pid IS NOT NULL AND NOT pid = ANY(pending) THEN
    PERFORM set_config({PENDING}, (pending || pid::text)::text, true);
  END IF;
END $$"""),
    Function(f"""CREATE OR REPLACE FUNCTION projects_list_versions_draw()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  pending text[] := {PENDING_LIST};
BEGIN
  IF cardinality(pending) > 0 THEN
    PERFORM set_config({PENDING}, '{{}}', true);
    -- '' sorts first: the names' row (made again if a flush removed it), then the projects'.
    IF '{OWNER_NAMES}' = ANY(pending) THEN
      INSERT INTO projects_projectlistversion (project_id, version)
      VALUES ('{OWNER_NAMES}', gen_random_uuid()::text)
      ON CONFLICT (project_id) DO UPDATE SET version = EXCLUDED.version;
    END IF;
    PERFORM 1 FROM projects_projectlistversion
      WHERE project_id = ANY(pending) AND project_id <> '{OWNER_NAMES}'
      ORDER BY project_id FOR UPDATE;
    UPDATE projects_projectlistversion SET version = gen_random_uuid()::text
     WHERE project_id = ANY(pending) AND project_id <> '{OWNER_NAMES}';
  END IF;
  RETURN NULL;
END $$"""),
    Function("""CREATE OR REPLACE FUNCTION projects_project_list_version()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO projects_projectlistversion (project_id, version)
    VALUES (NEW.id, gen_random_uuid()::text)
    ON CONFLICT (project_id) DO UPDATE SET version = EXCLUDED.version;
  ELSIF TG_OP = 'DELETE' THEN
    DELETE FROM projects_projectlistversion WHERE project_id = OLD.id;
  ELSE
    PERFORM projects_list_version_mark(OLD.id);
    PERFORM projects_list_version_mark(NEW.id);
  END IF;
  RETURN NULL;
END $$"""),
    # Any table with a project_id column whose rows the list reads.
    Function("""CREATE OR REPLACE FUNCTION projects_row_list_version()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM projects_list_version_mark(OLD.project_id);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM projects_list_version_mark(NEW.project_id);
  END IF;
  RETURN NULL;
END $$"""),
    Function(f"""CREATE OR REPLACE FUNCTION projects_owner_list_version()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.role_id = {OWNER} THEN
    PERFORM projects_list_version_mark(OLD.project_id);
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.role_id = {OWNER} THEN
    PERFORM projects_list_version_mark(NEW.project_id);
  END IF;
  RETURN NULL;
END $$"""),
    Function(f"""CREATE OR REPLACE FUNCTION projects_owner_names_list_version()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM projects_list_version_mark('{OWNER_NAMES}');
  RETURN NULL;
END $$"""),
)
POSTGRESQL_TRIGGERS = (
    Trigger("""CREATE TRIGGER projects_project_list_version AFTER INSERT OR UPDATE OR DELETE
ON projects_project FOR EACH ROW EXECUTE FUNCTION projects_project_list_version()"""),
    Trigger("""CREATE CONSTRAINT TRIGGER projects_project_list_version_draw
AFTER UPDATE ON projects_project
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION projects_list_versions_draw()"""),
    Trigger("""CREATE TRIGGER projects_member_count_list_version
AFTER INSERT OR UPDATE OR DELETE ON projects_projectmembercount
FOR EACH ROW EXECUTE FUNCTION projects_row_list_version()"""),
    Trigger("""CREATE CONSTRAINT TRIGGER projects_member_count_list_version_draw
AFTER INSERT OR UPDATE OR DELETE ON projects_projectmembercount
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION projects_list_versions_draw()"""),
    Trigger("""CREATE TRIGGER projects_owner_list_version AFTER INSERT OR UPDATE OR DELETE
ON projects_projectroleassignment FOR EACH ROW
EXECUTE FUNCTION projects_owner_list_version()"""),
    Trigger("""CREATE CONSTRAINT TRIGGER projects_owner_list_version_draw
AFTER INSERT OR UPDATE OR DELETE ON projects_projectroleassignment
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION projects_list_versions_draw()"""),
    Trigger("""CREATE TRIGGER projects_user_name_list_version
AFTER UPDATE OF name, username, email, image_url ON flagadmin_user FOR EACH ROW
WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.username IS DISTINCT FROM NEW.username
      OR OLD.email IS DISTINCT FROM NEW.email OR OLD.image_url IS DISTINCT FROM NEW.image_url)
EXECUTE FUNCTION projects_owner_names_list_version()"""),
    Trigger("""CREATE CONSTRAINT TRIGGER projects_user_name_list_version_draw
AFTER UPDATE OF name, username, email, image_url ON flagadmin_user
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION projects_list_versions_draw()"""),
    Trigger("""CREATE TRIGGER projects_group_name_list_version AFTER UPDATE OF name ON groups_group
FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
EXECUTE FUNCTION projects_owner_names_list_version()"""),
    Trigger("""CREATE CONSTRAINT TRIGGER projects_group_name_list_version_draw
AFTER UPDATE OF name ON groups_group DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_list_versions_draw()"""),
)

SQLITE_RANDOM = "lower(hex(randomblob(16)))"


def sqlite_bump(condition: str) -> str:
    return f"UPDATE projects_projectlistversion SET version = {SQLITE_RANDOM} WHERE {condition};"


# A name changed: the names' version, made again if a flush removed it.
SQLITE_OWNER_NAMES = (
    "INSERT OR REPLACE INTO projects_projectlistversion (project_id, version)"
    f" VALUES ('{OWNER_NAMES}', {SQLITE_RANDOM});"
)

SQLITE_TRIGGERS = (
    Trigger(
        "CREATE TRIGGER projects_project_list_version_insert AFTER INSERT ON projects_project"
        " BEGIN INSERT OR REPLACE INTO projects_projectlistversion (project_id, version)"
        f" VALUES (NEW.id, {SQLITE_RANDOM}); END"
    ),
    Trigger(
        "CREATE TRIGGER projects_project_list_version_update AFTER UPDATE ON projects_project"
        f" BEGIN {sqlite_bump('project_id IN (OLD.id, NEW.id)')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_project_list_version_delete AFTER DELETE ON projects_project"
        " BEGIN DELETE FROM projects_projectlistversion WHERE project_id = OLD.id; END"
    ),
    Trigger(
        "CREATE TRIGGER projects_member_count_list_version_insert"
        " AFTER INSERT ON projects_projectmembercount"
        f" BEGIN {sqlite_bump('project_id = NEW.project_id')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_member_count_list_version_update"
        " AFTER UPDATE ON projects_projectmembercount"
        f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_member_count_list_version_delete"
        " AFTER DELETE ON projects_projectmembercount"
        f" BEGIN {sqlite_bump('project_id = OLD.project_id')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_owner_list_version_insert"
        f" AFTER INSERT ON projects_projectroleassignment WHEN NEW.role_id = {OWNER}"
        f" BEGIN {sqlite_bump('project_id = NEW.project_id')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_owner_list_version_delete"
        f" AFTER DELETE ON projects_projectroleassignment WHEN OLD.role_id = {OWNER}"
        f" BEGIN {sqlite_bump('project_id = OLD.project_id')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_owner_list_version_update"
        " AFTER UPDATE ON projects_projectroleassignment"
        f" WHEN OLD.role_id = {OWNER} OR NEW.role_id = {OWNER}"
        f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_user_name_list_version"
        " AFTER UPDATE OF name, username, email, image_url ON flagadmin_user"
        " WHEN OLD.name IS NOT NEW.name OR OLD.username IS NOT NEW.username"
        " OR OLD.email IS NOT NEW.email OR OLD.image_url IS NOT NEW.image_url"
        f" BEGIN {SQLITE_OWNER_NAMES} END"
    ),
    Trigger(
        "CREATE TRIGGER projects_group_name_list_version AFTER UPDATE OF name ON groups_group"
        f" WHEN OLD.name IS NOT NEW.name BEGIN {SQLITE_OWNER_NAMES} END"
    ),
)

PROJECT_LIST_VERSIONS = Derived(
    tables=("projects.ProjectListVersion",),
    app="projects",
    keeps="a random version per project (and one for every owner's name), drawn anew when its "
    "project's row, member count, Owner assignments or an owner's name change",
    recount="projects.services.redraw_list_versions",
    postgresql_functions=POSTGRESQL_FUNCTIONS,
    postgresql_triggers=POSTGRESQL_TRIGGERS,
    postgresql_storage=(),
    sqlite_triggers=SQLITE_TRIGGERS,
)

# The flag side: tables with a project_id column that the list reads.
FLAG_TABLES = ("features_projectflagcount", "features_projectflagactivity")

FLAG_POSTGRESQL_TRIGGERS = (
    *(
        trigger
        for table in FLAG_TABLES
        for trigger in (
            Trigger(f"""CREATE TRIGGER {table}_list_version
AFTER INSERT OR UPDATE OR DELETE ON {table}
FOR EACH ROW EXECUTE FUNCTION projects_row_list_version()"""),
            Trigger(f"""CREATE CONSTRAINT TRIGGER {table}_list_version_draw
AFTER INSERT OR UPDATE OR DELETE ON {table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_list_versions_draw()"""),
        )
    ),
    Trigger("""CREATE TRIGGER features_created_at_list_version
AFTER UPDATE OF created_at ON features_feature
FOR EACH ROW WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at)
EXECUTE FUNCTION projects_row_list_version()"""),
    Trigger("""CREATE CONSTRAINT TRIGGER features_created_at_list_version_draw
AFTER UPDATE OF created_at ON features_feature DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_list_versions_draw()"""),
)

FLAG_SQLITE_TRIGGERS = (
    *(
        trigger
        for table in FLAG_TABLES
        for trigger in (
            Trigger(
                f"CREATE TRIGGER {table}_list_version_insert AFTER INSERT ON {table}"
                f" BEGIN {sqlite_bump('project_id = NEW.project_id')} END"
            ),
            Trigger(
                f"CREATE TRIGGER {table}_list_version_update AFTER UPDATE ON {table}"
                f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END"
            ),
            Trigger(
                f"CREATE TRIGGER {table}_list_version_delete AFTER DELETE ON {table}"
                f" BEGIN {sqlite_bump('project_id = OLD.project_id')} END"
            ),
        )
    ),
    Trigger(
        "CREATE TRIGGER features_created_at_list_version AFTER UPDATE OF created_at"
        " ON features_feature WHEN OLD.created_at IS NOT NEW.created_at"
        f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END"
    ),
)

FLAG_LIST_VERSIONS = Derived(
    tables=("projects.ProjectListVersion",),
    app="features",
    keeps="the same versions, drawn anew when a project's flag counts or flag activity change, "
    "or a flag's creation time",
    recount="projects.services.redraw_list_versions",
    postgresql_functions=(),
    postgresql_triggers=FLAG_POSTGRESQL_TRIGGERS,
    postgresql_storage=(),
    sqlite_triggers=FLAG_SQLITE_TRIGGERS,
)
