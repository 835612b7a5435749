"""Permission names, as Unleash spells them (403 messages quote them), and the seeded roles."""

ADMIN = "ADMIN"
NONE = "NONE"
CREATE_FEATURE = "CREATE_FEATURE"
UPDATE_FEATURE = "UPDATE_FEATURE"
DELETE_FEATURE = "DELETE_FEATURE"
CREATE_PROJECT = "CREATE_PROJECT"
UPDATE_PROJECT = "UPDATE_PROJECT"
DELETE_PROJECT = "DELETE_PROJECT"
UPDATE_PROJECT_ACCESS = "UPDATE_PROJECT_ACCESS"
# Root permissions for segments (Unleash's Admin and Editor roles have them).
CREATE_SEGMENT = "CREATE_SEGMENT"
UPDATE_SEGMENT = "UPDATE_SEGMENT"
DELETE_SEGMENT = "DELETE_SEGMENT"
SEGMENT_PERMISSIONS = [CREATE_SEGMENT, UPDATE_SEGMENT, DELETE_SEGMENT]
# Root permissions for tag types (in Unleash only its Admin role has them).
CREATE_TAG_TYPE = "CREATE_TAG_TYPE"
UPDATE_TAG_TYPE = "UPDATE_TAG_TYPE"
DELETE_TAG_TYPE = "DELETE_TAG_TYPE"
# A project's client tokens (Unleash's Editor, Owner and Member roles have them).
READ_PROJECT_API_TOKEN = "READ_PROJECT_API_TOKEN"
CREATE_PROJECT_API_TOKEN = "CREATE_PROJECT_API_TOKEN"
DELETE_PROJECT_API_TOKEN = "DELETE_PROJECT_API_TOKEN"
PROJECT_API_TOKEN_PERMISSIONS = [
    READ_PROJECT_API_TOKEN,
    CREATE_PROJECT_API_TOKEN,
    DELETE_PROJECT_API_TOKEN,
]

# Permissions a project role can grant within its project.
PROJECT_PERMISSIONS = frozenset(
    {
        CREATE_FEATURE,
        UPDATE_FEATURE,
        DELETE_FEATURE,
        UPDATE_PROJECT,
        DELETE_PROJECT,
        UPDATE_PROJECT_ACCESS,
        *PROJECT_API_TOKEN_PERMISSIONS,
    }
)

# The seeded roles with Unleash's fixed ids: (id, name, type, description, permissions).
SEEDED_ROLES = [
    (1, "Admin", "root", "Users with the root admin role have superuser access.", [ADMIN]),
    (
        2,
        "Editor",
        "root",
        "Users with the root editor role can create projects and flags in any project.",
        [
            CREATE_PROJECT,
            CREATE_FEATURE,
            UPDATE_FEATURE,
            DELETE_FEATURE,
            *SEGMENT_PERMISSIONS,
            *PROJECT_API_TOKEN_PERMISSIONS,
        ],
    ),
    (3, "Viewer", "root", "Users with the root viewer role can only read resources.", []),
    (
        4,
        "Owner",
        "project",
        "Users with the project owner role have full control over the project.",
        sorted(PROJECT_PERMISSIONS),
    ),
    (
        5,
        "Member",
        "project",
        "Users with the project member role can create and change flags in the project.",
        [CREATE_FEATURE, UPDATE_FEATURE, DELETE_FEATURE, *PROJECT_API_TOKEN_PERMISSIONS],
    ),
]
