"""The context fields and strategies Unleash 8.2 seeds (its migrations up to 8.2, measured on a
fresh instance): five context fields, sessionId the one with stickiness, no legal values; four
built-in strategies (`editable: false`), flexibleRollout first. userWithId and the gradual
rollouts are no longer among them. The Editor role gets the six root permissions over them that
Unleash's Editor has."""

from django.db import migrations
from django.utils import timezone

CONTEXT_FIELDS = [
    # (name, description, sort order, stickiness)
    ("environment", "Allows you to constrain on application environment", 0, False),
    ("userId", "Allows you to constrain on userId", 1, False),
    ("appName", "Allows you to constrain on application name", 2, False),
    ("currentTime", "Allows you to constrain on date values", 3, False),
    ("sessionId", "Allows you to constrain on sessionId", 4, True),
]

GROUP_ID = {
    "name": "groupId",
    "type": "string",
    "description": "Used to define a activation groups, which allows you to correlate across "
    "feature toggles.",
    "required": True,
}
STRATEGIES = [
    {
        "name": "flexibleRollout",
        "display_name": "Gradual rollout",
        "description": "Roll out to a percentage of your userbase, and ensure that the experience "
        "is the same for the user on each visit.",
        "parameters": [
            {"name": "rollout", "type": "percentage", "description": "", "required": False},
            {
                "name": "stickiness",
                "type": "string",
                "description": "Used define stickiness. Possible values: default, userId, "
                "sessionId, random",
                "required": True,
            },
            GROUP_ID,
        ],
        "sort_order": 0,
    },
    {
        "name": "default",
        "display_name": "Standard",
        "description": 'This strategy turns on / off for your entire userbase. Prefer using "Gradual '
        'rollout" strategy (100%=on, 0%=off).',
        "parameters": [],
        "sort_order": 1,
    },
    {
        "name": "remoteAddress",
        "display_name": "IPs",
        "description": "Enable the feature for a specific set of IP addresses.",
        "parameters": [
            {
                "name": "IPs",
                "type": "list",
                "description": "List of IPs to enable the feature toggle for.",
                "required": True,
            }
        ],
        "sort_order": 3,
    },
    {
        "name": "applicationHostname",
        "display_name": "Hosts",
        "description": "Enable the feature for a specific set of hostnames.",
        "parameters": [
            {
                "name": "hostNames",
                "type": "list",
                "description": "List of hostnames to enable the feature toggle for.",
                "required": False,
            }
        ],
        "sort_order": 4,
    },
]

EDITOR_ROLE_ID = 2
PERMISSIONS = [
    "CREATE_CONTEXT_FIELD",
    "UPDATE_CONTEXT_FIELD",
    "DELETE_CONTEXT_FIELD",
    "CREATE_STRATEGY",
    "UPDATE_STRATEGY",
    "DELETE_STRATEGY",
]


def seed(apps, schema_editor):
    ContextField = apps.get_model("definitions", "ContextField")
    StrategyDefinition = apps.get_model("definitions", "StrategyDefinition")
    now = timezone.now()
    for name, description, sort_order, stickiness in CONTEXT_FIELDS:
        ContextField.objects.get_or_create(
            name=name,
            defaults={
                "description": description,
                "sort_order": sort_order,
                "stickiness": stickiness,
                "legal_values": [],
                "created_at": now,
            },
        )
    for strategy in STRATEGIES:
        fields = {key: value for key, value in strategy.items() if key != "name"}
        StrategyDefinition.objects.get_or_create(
            name=strategy["name"], defaults={**fields, "built_in": True, "created_at": now}
        )
    Role = apps.get_model("flagadmin", "Role")
    editor = Role.objects.filter(id=EDITOR_ROLE_ID).first()
    if editor is not None:
        missing = [p for p in PERMISSIONS if p not in editor.permissions]
        if missing:
            editor.permissions = [*editor.permissions, *missing]
            editor.save(update_fields=["permissions"])


def unseed(apps, schema_editor):
    apps.get_model("definitions", "ContextField").objects.filter(
        name__in=[row[0] for row in CONTEXT_FIELDS]
    ).delete()
    apps.get_model("definitions", "StrategyDefinition").objects.filter(built_in=True).delete()
    Role = apps.get_model("flagadmin", "Role")
    editor = Role.objects.filter(id=EDITOR_ROLE_ID).first()
    if editor is not None:
        editor.permissions = [p for p in editor.permissions if p not in PERMISSIONS]
        editor.save(update_fields=["permissions"])


class Migration(migrations.Migration):
    dependencies = [
        ("definitions", "0001_initial"),
        ("flagadmin", "0007_editor_segment_permissions"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
