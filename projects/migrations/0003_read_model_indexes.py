"""Indexes that GET /api/admin/projects needs on tables of other apps.

The projects list reads two figures from tables it does not own:
- lastUpdatedAt: the newest audit event about a flag of the project. The audit table's
  (project, feature_name, created_at) index would need one probe per flag; this one answers
  with one probe per project: (project, created_at DESC) over the events about flags only.
- lastReportedFlagUsage: the newest `last_seen_at` of the project's flags: one probe per
  project instead of reading every flag row.

They are created here, next to the query that needs them, as plain SQL that SQLite and
PostgreSQL both accept (partial, descending indexes). The models of `flagadmin` and `features`
do not declare them; should those apps declare them one day, this migration's indexes are to
be dropped in the same change.
"""

from django.db import migrations

AUDIT_INDEX = "audit_flag_event_newest"
LAST_SEEN_INDEX = "feature_last_seen"


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0002_seed_default_project"),
        ("flagadmin", "0001_initial"),
        ("features", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE INDEX {AUDIT_INDEX} ON flagadmin_auditevent (project, created_at DESC) "
            "WHERE feature_name IS NOT NULL",
            f"DROP INDEX {AUDIT_INDEX}",
        ),
        migrations.RunSQL(
            f"CREATE INDEX {LAST_SEEN_INDEX} ON features_feature (project_id, last_seen_at DESC) "
            "WHERE last_seen_at IS NOT NULL",
            f"DROP INDEX {LAST_SEEN_INDEX}",
        ),
    ]
