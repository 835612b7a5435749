"""The flag side of the projects list's versions (projects migration 0004): a project's
version is drawn anew when its flag counts or its flag activity change (the rows migrations
0007 and 0008 keep, whatever flag write or event moved them), and when a flag's creation time
changes, which no count shows but the potentially-stale count depends on.
"""

from django.db import migrations

TABLES = ("features_projectflagcount", "features_projectflagactivity")

# On PostgreSQL, as in projects migration 0004: the row triggers mark the project, the
# deferred one draws the marked versions at commit, in key order.
POSTGRESQL = (
    "".join(
        f"""
CREATE TRIGGER {table}_list_version AFTER INSERT OR UPDATE OR DELETE ON {table}
FOR EACH ROW EXECUTE FUNCTION projects_row_list_version();
CREATE CONSTRAINT TRIGGER {table}_list_version_draw AFTER INSERT OR UPDATE OR DELETE
ON {table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_list_versions_draw();"""
        for table in TABLES
    )
    + """
CREATE TRIGGER features_created_at_list_version AFTER UPDATE OF created_at ON features_feature
FOR EACH ROW WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at)
EXECUTE FUNCTION projects_row_list_version();
CREATE CONSTRAINT TRIGGER features_created_at_list_version_draw
AFTER UPDATE OF created_at ON features_feature DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION projects_list_versions_draw();
"""
)

POSTGRESQL_DROP = "".join(
    f"DROP TRIGGER {name}_list_version_draw ON {table}; DROP TRIGGER {name}_list_version ON {table};"
    for name, table in [
        *((table, table) for table in TABLES),
        ("features_created_at", "features_feature"),
    ]
)


def sqlite_bump(condition: str) -> str:
    return (
        "UPDATE projects_projectlistversion SET version = lower(hex(randomblob(16)))"
        f" WHERE {condition};"
    )


SQLITE = [
    statement
    for table in TABLES
    for statement in (
        f"CREATE TRIGGER {table}_list_version_insert AFTER INSERT ON {table}"
        f" BEGIN {sqlite_bump('project_id = NEW.project_id')} END",
        f"CREATE TRIGGER {table}_list_version_update AFTER UPDATE ON {table}"
        f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END",
        f"CREATE TRIGGER {table}_list_version_delete AFTER DELETE ON {table}"
        f" BEGIN {sqlite_bump('project_id = OLD.project_id')} END",
    )
] + [
    "CREATE TRIGGER features_created_at_list_version AFTER UPDATE OF created_at"
    " ON features_feature WHEN OLD.created_at IS NOT NEW.created_at"
    f" BEGIN {sqlite_bump('project_id IN (OLD.project_id, NEW.project_id)')} END"
]
SQLITE_DROP = ["DROP TRIGGER " + statement.split()[2] for statement in SQLITE]


def install(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
    else:
        for statement in SQLITE:
            schema_editor.execute(statement)


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_DROP)
    else:
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("features", "0010_sqlite_activity_delete_triggers_update_only"),
        ("projects", "0004_project_list_versions"),
    ]

    operations = [migrations.RunPython(install, drop, elidable=False)]
