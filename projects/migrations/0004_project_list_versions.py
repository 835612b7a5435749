"""A random version per project, drawn anew by the database whenever a project's entry in the
projects list may change (`ProjectListVersion`). This migration covers what the projects app
owns: the project's row, its member count, its Owner assignments (role 4) and the names of the
users and groups they name. The flag figures are covered by features migration 0011.
"""

from django.db import migrations, models

OWNER = 4  # Role.OWNER: the owners the list shows

# On PostgreSQL the versions are drawn when the writing transaction commits (deferred
# constraint triggers): a version's row is then locked last, after every row the write itself
# locks, so that it adds no order in which two writers could wait for each other.
POSTGRESQL = f"""
CREATE FUNCTION projects_list_version_bump(pid varchar) RETURNS void LANGUAGE sql AS $$
  UPDATE projects_projectlistversion SET version = gen_random_uuid()::text
   WHERE project_id = pid
$$;

CREATE FUNCTION projects_project_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO projects_projectlistversion (project_id, version)
    VALUES (NEW.id, gen_random_uuid()::text)
    ON CONFLICT (project_id) DO UPDATE SET version = EXCLUDED.version;
  ELSIF TG_OP = 'DELETE' THEN
    DELETE FROM projects_projectlistversion WHERE project_id = OLD.id;
  ELSE
    PERFORM projects_list_version_bump(NEW.id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER projects_project_list_version_row AFTER INSERT OR DELETE
ON projects_project FOR EACH ROW EXECUTE FUNCTION projects_project_list_version();
CREATE CONSTRAINT TRIGGER projects_project_list_version AFTER UPDATE ON projects_project
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION projects_project_list_version();

-- Any table with a project_id column whose rows the list reads.
CREATE FUNCTION projects_row_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM projects_list_version_bump(OLD.project_id);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.project_id <> OLD.project_id) THEN
    PERFORM projects_list_version_bump(NEW.project_id);
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER projects_member_count_list_version
AFTER INSERT OR UPDATE OR DELETE ON projects_projectmembercount
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION projects_row_list_version();
CREATE CONSTRAINT TRIGGER projects_owner_list_version_insert
AFTER INSERT ON projects_projectroleassignment DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.role_id = {OWNER}) EXECUTE FUNCTION projects_row_list_version();
CREATE CONSTRAINT TRIGGER projects_owner_list_version_delete
AFTER DELETE ON projects_projectroleassignment DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (OLD.role_id = {OWNER}) EXECUTE FUNCTION projects_row_list_version();
CREATE CONSTRAINT TRIGGER projects_owner_list_version_update
AFTER UPDATE ON projects_projectroleassignment DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (OLD.role_id = {OWNER} OR NEW.role_id = {OWNER})
EXECUTE FUNCTION projects_row_list_version();

CREATE FUNCTION projects_owner_name_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- In key order, as every other writer of several projects' versions.
  IF TG_TABLE_NAME = 'flagadmin_user' THEN
    PERFORM projects_list_version_bump(owned.project_id) FROM (
      SELECT DISTINCT a.project_id FROM projects_projectroleassignment a
       WHERE a.user_id = NEW.id AND a.role_id = {OWNER} ORDER BY a.project_id) owned;
  ELSE
    PERFORM projects_list_version_bump(owned.project_id) FROM (
      SELECT DISTINCT a.project_id FROM projects_projectroleassignment a
       WHERE a.group_id = NEW.id AND a.role_id = {OWNER} ORDER BY a.project_id) owned;
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER projects_owner_user_list_version
AFTER UPDATE OF name, username, email, image_url ON flagadmin_user
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_owner_name_list_version();
CREATE CONSTRAINT TRIGGER projects_owner_group_list_version
AFTER UPDATE OF name ON groups_group DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_owner_name_list_version();
"""

POSTGRESQL_DROP = """
DROP TRIGGER projects_owner_group_list_version ON groups_group;
DROP TRIGGER projects_owner_user_list_version ON flagadmin_user;
DROP FUNCTION projects_owner_name_list_version();
DROP TRIGGER projects_owner_list_version_update ON projects_projectroleassignment;
DROP TRIGGER projects_owner_list_version_delete ON projects_projectroleassignment;
DROP TRIGGER projects_owner_list_version_insert ON projects_projectroleassignment;
DROP TRIGGER projects_member_count_list_version ON projects_projectmembercount;
DROP FUNCTION projects_row_list_version();
DROP TRIGGER projects_project_list_version ON projects_project;
DROP TRIGGER projects_project_list_version_row ON projects_project;
DROP FUNCTION projects_project_list_version();
DROP FUNCTION projects_list_version_bump(varchar);
"""

SQLITE_RANDOM = "lower(hex(randomblob(16)))"


def sqlite_bump(condition: str) -> str:
    return (
        f"UPDATE projects_projectlistversion SET version = {SQLITE_RANDOM} WHERE {condition};"
    )


def sqlite_owned_by(column: str) -> str:
    return (
        "project_id IN (SELECT a.project_id FROM projects_projectroleassignment a"
        f" WHERE a.{column} = NEW.id AND a.role_id = {OWNER})"
    )


SQLITE = [
    "CREATE TRIGGER projects_project_list_version_insert AFTER INSERT ON projects_project"
    " BEGIN INSERT OR REPLACE INTO projects_projectlistversion (project_id, version)"
    f" VALUES (NEW.id, {SQLITE_RANDOM}); END",
    "CREATE TRIGGER projects_project_list_version_update AFTER UPDATE ON projects_project"
    f" BEGIN {sqlite_bump('project_id IN (OLD.id, NEW.id)')} END",
    "CREATE TRIGGER projects_project_list_version_delete AFTER DELETE ON projects_project"
    " BEGIN DELETE FROM projects_projectlistversion WHERE project_id = OLD.id; END",
    "CREATE TRIGGER projects_member_count_list_version_insert"
    " AFTER INSERT ON projects_projectmembercount"
    f" BEGIN {sqlite_bump('project_id = NEW.project_id')} END",
    "CREATE TRIGGER projects_member_count_list_version_update"
    " AFTER UPDATE ON projects_projectmembercount"
    f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END",
    "CREATE TRIGGER projects_member_count_list_version_delete"
    " AFTER DELETE ON projects_projectmembercount"
    f" BEGIN {sqlite_bump('project_id = OLD.project_id')} END",
    "CREATE TRIGGER projects_owner_list_version_insert"
    f" AFTER INSERT ON projects_projectroleassignment WHEN NEW.role_id = {OWNER}"
    f" BEGIN {sqlite_bump('project_id = NEW.project_id')} END",
    "CREATE TRIGGER projects_owner_list_version_delete"
    f" AFTER DELETE ON projects_projectroleassignment WHEN OLD.role_id = {OWNER}"
    f" BEGIN {sqlite_bump('project_id = OLD.project_id')} END",
    "CREATE TRIGGER projects_owner_list_version_update"
    " AFTER UPDATE ON projects_projectroleassignment"
    f" WHEN OLD.role_id = {OWNER} OR NEW.role_id = {OWNER}"
    f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END",
    "CREATE TRIGGER projects_owner_user_list_version"
    " AFTER UPDATE OF name, username, email, image_url ON flagadmin_user"
    f" BEGIN {sqlite_bump(sqlite_owned_by('user_id'))} END",
    "CREATE TRIGGER projects_owner_group_list_version AFTER UPDATE OF name ON groups_group"
    f" BEGIN {sqlite_bump(sqlite_owned_by('group_id'))} END",
]
SQLITE_DROP = ["DROP TRIGGER " + statement.split()[2] for statement in SQLITE]


def install(apps, schema_editor) -> None:
    postgresql = schema_editor.connection.vendor == "postgresql"
    if postgresql:
        schema_editor.execute(POSTGRESQL)
    else:
        for statement in SQLITE:
            schema_editor.execute(statement)
    random = "gen_random_uuid()::text" if postgresql else SQLITE_RANDOM
    schema_editor.execute(
        "INSERT INTO projects_projectlistversion (project_id, version)"
        f" SELECT id, {random} FROM projects_project"
    )


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_DROP)
    else:
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    schema_editor.execute("DELETE FROM projects_projectlistversion")


class Migration(migrations.Migration):
    dependencies = [("projects", "0003_project_members")]

    operations = [
        migrations.CreateModel(
            name="ProjectListVersion",
            fields=[
                (
                    "project_id",
                    models.CharField(max_length=100, primary_key=True, serialize=False),
                ),
                ("version", models.CharField(max_length=36)),
            ],
        ),
        migrations.RunPython(install, drop, elidable=False),
    ]
