"""Drop `audit_project_feature` (project, feature_name, -created_at): it cost a write per audit
event and served no query alone. The one query that filters events by both, the activity
trigger's newest event of a newly inserted flag (migration features/0008), walks `audit_feature`
just as fast, flag names being unique across projects; a project's newest flag event uses
`audit_flag_event_newest` (0004)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('flagadmin', '0005_admin_labels'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='auditevent',
            name='audit_project_feature',
        ),
    ]
