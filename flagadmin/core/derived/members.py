"""`projects.ProjectMember` and `projects.ProjectMemberCount`: who holds a project role in each
project, through their own assignment or a group's (each (project, user) row counts the user's
paths into the project), and how many they are (`memberCount`). The member count moves when a
row appears or goes.

Members change with role assignments, group memberships and role types, whatever writes them
(the API, the Django admin, SSO group sync, deletes that cascade). On PostgreSQL every change
of members first takes one transaction-level advisory lock (`projects_members_lock`, the lock
`flagadmin.core.locks.members_write` takes), so that such writes, from any process, run one after
the other and each reads what the previous one wrote; then it changes one row at a time with
upserts (RETURNING the new number of paths). SQLite has one writer at a time and no functions:
its triggers change whole sets with plain statements.
"""

from flagadmin.core.derived.schema import Derived, Function, Trigger

ROLE_TYPES = "('project', 'custom')"  # the role types that count (projects.selectors)


def assignment_paths(row: str) -> str:
    """The paths an assignment row (`OLD` or `NEW`) makes: its user's, or its group members'."""
    return f"""SELECT {row}.project_id AS project_id, {row}.user_id AS user_id, 1 AS n
      WHERE {row}.user_id IS NOT NULL
     UNION ALL
     SELECT {row}.project_id, gm.user_id, 1 FROM groups_groupmembership gm
      WHERE gm.group_id = {row}.group_id"""


def membership_paths(row: str) -> str:
    """The paths a group membership row makes: one per assignment of its group, per project."""
    return f"""SELECT a.project_id AS project_id, {row}.user_id AS user_id, COUNT(*) AS n
      FROM projects_projectroleassignment a JOIN flagadmin_role r ON r.id = a.role_id
     WHERE a.group_id = {row}.group_id AND r.type IN {ROLE_TYPES}
     GROUP BY a.project_id"""


def role_paths(row: str) -> str:
    """Every path the assignments of a role make."""
    return f"""SELECT project_id, user_id, COUNT(*) AS n FROM (
       SELECT a.project_id AS project_id, a.user_id AS user_id
         FROM projects_projectroleassignment a
        WHERE a.role_id = {row}.id AND a.user_id IS NOT NULL
       UNION ALL
       SELECT a.project_id, gm.user_id FROM projects_projectroleassignment a
         JOIN groups_groupmembership gm ON gm.group_id = a.group_id
        WHERE a.role_id = {row}.id) held
     GROUP BY project_id, user_id"""


POSTGRESQL_FUNCTIONS = (
    Function("""CREATE OR REPLACE FUNCTION projects_member_add(pid varchar, uid bigint, n integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  now_paths integer;
BEGIN
  INSERT INTO projects_projectmember AS m (project_id, user_id, paths) VALUES (pid, uid, n)
  ON CONFLICT (project_id, user_id) DO UPDATE SET paths = m.paths + EXCLUDED.paths
  RETURNING paths INTO now_paths;
  IF now_paths = n THEN  -- a new member
    INSERT INTO projects_projectmembercount AS c (project_id, total) VALUES (pid, 1)
    ON CONFLICT (project_id) DO UPDATE SET total = c.total + 1;
  END IF;
END $$"""),
    # No count row is made here: a project being deleted may have lost it already.
    Function("""CREATE OR REPLACE FUNCTION projects_member_remove(pid varchar, uid bigint,
                                                  n integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  now_paths integer;
BEGIN
  UPDATE projects_projectmember SET paths = paths - n
   WHERE project_id = pid AND user_id = uid
  RETURNING paths INTO now_paths;
  IF now_paths <= 0 THEN  -- no path left: no longer a member
    DELETE FROM projects_projectmember WHERE project_id = pid AND user_id = uid;
    UPDATE projects_projectmembercount SET total = total - 1 WHERE project_id = pid;
  END IF;
END $$"""),
    Function(f"""CREATE OR REPLACE FUNCTION projects_role_counts(rid bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM flagadmin_role WHERE id = rid AND type IN {ROLE_TYPES})
$$"""),
    # Every change of members first takes one lock for all of them, held to the end of its
    # transaction (these writes are rare: role assignments, group memberships, role types).
    # They then run one after the other: each reads, with a new snapshot after the lock, what
    # the one before it wrote (an assignment of a group and a membership of that group written
    # at once would otherwise each miss the other's row), and none waits for a member or count
    # row that another holds while that one waits for it (deadlock).
    Function("""CREATE OR REPLACE FUNCTION projects_members_lock() RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(7202611230001)
$$"""),
    # An assignment is one path into its project for its user, or for each member of its group.
    Function("""CREATE OR REPLACE FUNCTION projects_assignment_members()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND (OLD.project_id, OLD.role_id, OLD.user_id, OLD.group_id)
     IS NOT DISTINCT FROM (NEW.project_id, NEW.role_id, NEW.user_id, NEW.group_id) THEN
    RETURN NULL;
  END IF;
  PERFORM projects_members_lock();
  IF TG_OP <> 'INSERT' AND projects_role_counts(OLD.role_id) THEN
    IF OLD.user_id IS NOT NULL THEN
      PERFORM projects_member_remove(OLD.project_id, OLD.user_id, 1);
    END IF;
    PERFORM projects_member_remove(OLD.project_id, gm.user_id, 1)
       FROM groups_groupmembership gm WHERE gm.group_id = OLD.group_id ORDER BY gm.user_id;
  END IF;
  IF TG_OP <> 'DELETE' AND projects_role_counts(NEW.role_id) THEN
    IF NEW.user_id IS NOT NULL THEN
      PERFORM projects_member_add(NEW.project_id, NEW.user_id, 1);
    END IF;
    PERFORM projects_member_add(NEW.project_id, gm.user_id, 1)
       FROM groups_groupmembership gm WHERE gm.group_id = NEW.group_id ORDER BY gm.user_id;
  END IF;
  RETURN NULL;
END $$"""),
    # A group membership is one path into each project where the group holds a role, per role.
    Function(f"""CREATE OR REPLACE FUNCTION projects_group_membership_members()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND (OLD.group_id, OLD.user_id) = (NEW.group_id, NEW.user_id) THEN
    RETURN NULL;
  END IF;
  PERFORM projects_members_lock();
  IF TG_OP <> 'INSERT' THEN
    PERFORM projects_member_remove(p.project_id, p.user_id, p.n::integer)
       FROM ({membership_paths("OLD")}) p ORDER BY p.project_id;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM projects_member_add(p.project_id, p.user_id, p.n::integer)
       FROM ({membership_paths("NEW")}) p ORDER BY p.project_id;
  END IF;
  RETURN NULL;
END $$"""),
    # A role that starts or stops counting adds or removes every path its assignments make.
    Function(f"""CREATE OR REPLACE FUNCTION projects_role_type_members()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  counted boolean := OLD.type IN {ROLE_TYPES};
  counts boolean := NEW.type IN {ROLE_TYPES};
BEGIN
  IF counted = counts THEN
    RETURN NULL;
  END IF;
  PERFORM projects_members_lock();
  IF counts THEN
    PERFORM projects_member_add(p.project_id, p.user_id, p.n::integer)
       FROM ({role_paths("NEW")}) p ORDER BY p.project_id, p.user_id;
  ELSE
    PERFORM projects_member_remove(p.project_id, p.user_id, p.n::integer)
       FROM ({role_paths("NEW")}) p ORDER BY p.project_id, p.user_id;
  END IF;
  RETURN NULL;
END $$"""),
)
POSTGRESQL_TRIGGERS = (
    Trigger("""CREATE TRIGGER projects_assignment_members
AFTER INSERT OR UPDATE OR DELETE ON projects_projectroleassignment
FOR EACH ROW EXECUTE FUNCTION projects_assignment_members()"""),
    Trigger("""CREATE TRIGGER projects_group_membership_members
AFTER INSERT OR UPDATE OR DELETE ON groups_groupmembership
FOR EACH ROW EXECUTE FUNCTION projects_group_membership_members()"""),
    Trigger("""CREATE TRIGGER projects_role_type_members AFTER UPDATE OF type ON flagadmin_role
FOR EACH ROW EXECUTE FUNCTION projects_role_type_members()"""),
)
POSTGRESQL_STORAGE = ("ALTER TABLE projects_projectmembercount SET (fillfactor = 50)",)


def sqlite_add(paths: str) -> str:
    """Statements adding `paths`, a SELECT of (project_id, user_id, n) with one row per
    project and user: the count first (users without a row yet), then the rows."""
    return f"""
  INSERT INTO projects_projectmembercount (project_id, total)
  SELECT DISTINCT p.project_id, 0 FROM ({paths}) p WHERE true
  ON CONFLICT (project_id) DO NOTHING;
  UPDATE projects_projectmembercount SET total = total + (
    SELECT COUNT(*) FROM ({paths}) p
     WHERE p.project_id = projects_projectmembercount.project_id
       AND NOT EXISTS (SELECT 1 FROM projects_projectmember m
                        WHERE m.project_id = p.project_id AND m.user_id = p.user_id))
   WHERE project_id IN (SELECT p.project_id FROM ({paths}) p);
  INSERT INTO projects_projectmember (project_id, user_id, paths)
  SELECT p.project_id, p.user_id, p.n FROM ({paths}) p WHERE true
  ON CONFLICT (project_id, user_id) DO UPDATE SET paths = paths + excluded.paths;"""


def sqlite_remove(paths: str) -> str:
    """Statements removing `paths` (as for `sqlite_add`): the rows' paths, then the rows with
    none left, counted out first."""
    return f"""
  UPDATE projects_projectmember SET paths = paths - (
    SELECT p.n FROM ({paths}) p
     WHERE p.project_id = projects_projectmember.project_id
       AND p.user_id = projects_projectmember.user_id)
   WHERE (project_id, user_id) IN (SELECT p.project_id, p.user_id FROM ({paths}) p);
  UPDATE projects_projectmembercount SET total = total - (
    SELECT COUNT(*) FROM projects_projectmember m
     WHERE m.project_id = projects_projectmembercount.project_id AND m.paths <= 0)
   WHERE project_id IN (SELECT project_id FROM projects_projectmember WHERE paths <= 0);
  DELETE FROM projects_projectmember WHERE paths <= 0;"""


def counts(row: str) -> str:
    return f"(SELECT type FROM flagadmin_role WHERE id = {row}.role_id) IN {ROLE_TYPES}"


_ASSIGNMENT_CHANGED = (
    " AND NOT (OLD.project_id = NEW.project_id"
    " AND OLD.role_id = NEW.role_id AND OLD.user_id IS NEW.user_id"
    " AND OLD.group_id IS NEW.group_id)"
)
SQLITE_TRIGGERS = (
    Trigger(
        "CREATE TRIGGER projects_assignment_members_insert"
        f" AFTER INSERT ON projects_projectroleassignment WHEN {counts('NEW')}"
        f" BEGIN{sqlite_add(assignment_paths('NEW'))}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_assignment_members_delete"
        f" AFTER DELETE ON projects_projectroleassignment WHEN {counts('OLD')}"
        f" BEGIN{sqlite_remove(assignment_paths('OLD'))}\nEND"
    ),
    # An update: the old row's paths go (when its role counted), the new row's come.
    Trigger(
        "CREATE TRIGGER projects_assignment_members_update_old"
        " AFTER UPDATE ON projects_projectroleassignment"
        f" WHEN {counts('OLD')}{_ASSIGNMENT_CHANGED}"
        f" BEGIN{sqlite_remove(assignment_paths('OLD'))}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_assignment_members_update_new"
        " AFTER UPDATE ON projects_projectroleassignment"
        f" WHEN {counts('NEW')}{_ASSIGNMENT_CHANGED}"
        f" BEGIN{sqlite_add(assignment_paths('NEW'))}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_group_membership_members_insert"
        " AFTER INSERT ON groups_groupmembership"
        f" BEGIN{sqlite_add(membership_paths('NEW'))}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_group_membership_members_delete"
        " AFTER DELETE ON groups_groupmembership"
        f" BEGIN{sqlite_remove(membership_paths('OLD'))}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_group_membership_members_update"
        " AFTER UPDATE OF group_id, user_id ON groups_groupmembership"
        " WHEN OLD.group_id <> NEW.group_id OR OLD.user_id <> NEW.user_id"
        f" BEGIN{sqlite_remove(membership_paths('OLD'))}{sqlite_add(membership_paths('NEW'))}"
        "\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_role_type_members_on AFTER UPDATE OF type ON flagadmin_role"
        f" WHEN OLD.type NOT IN {ROLE_TYPES} AND NEW.type IN {ROLE_TYPES}"
        f" BEGIN{sqlite_add(role_paths('NEW'))}\nEND"
    ),
    Trigger(
        "CREATE TRIGGER projects_role_type_members_off AFTER UPDATE OF type ON flagadmin_role"
        f" WHEN OLD.type IN {ROLE_TYPES} AND NEW.type NOT IN {ROLE_TYPES}"
        f" BEGIN{sqlite_remove(role_paths('NEW'))}\nEND"
    ),
)

MEMBERS = Derived(
    tables=("projects.ProjectMember", "projects.ProjectMemberCount"),
    app="projects",
    keeps="each user's paths into each project (own project roles and their groups'), and the "
    "number of members per project",
    recount="projects.member_stats.repair",
    postgresql_functions=POSTGRESQL_FUNCTIONS,
    postgresql_triggers=POSTGRESQL_TRIGGERS,
    postgresql_storage=POSTGRESQL_STORAGE,
    sqlite_triggers=SQLITE_TRIGGERS,
)
