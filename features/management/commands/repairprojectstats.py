"""Recompute the per-project flag figures the database keeps, and fix those that differ."""

from django.core.management.base import BaseCommand

from features.project_stats import repair
from projects import member_stats
from projects.services import redraw_list_versions


class Command(BaseCommand):
    help = (
        "Recount the flags of every project (by type and stale state, and by type and day of "
        "creation), recompute when its "
        "flags were last changed and used, recount its members, and fix the stored figures "
        "that differ; then draw a new version of every project's entry in the projects list, "
        "so that every worker computes them again. Writes of flags, audit events, role "
        "assignments and group memberships wait while it runs; safe to run at any time."
    )

    def handle(self, *args, **options) -> None:
        wrong_counts, wrong_days, wrong_times = repair()
        for (project, kind, stale), (was, now) in sorted(wrong_counts.items()):
            state = "stale" if stale else "not stale"
            self.stdout.write(f"{project}: {kind} flags, {state}: {was} -> {now}")
        for (project, kind, day), (was, now) in sorted(wrong_days.items()):
            self.stdout.write(
                f"{project}: {kind} flags created {day.isoformat()}, neither archived nor "
                f"stale: {was} -> {now}"
            )
        for project, (was, now) in sorted(wrong_times.items()):
            self.stdout.write(f"{project}: last flag event, usage: {_times(was)} -> {_times(now)}")
        wrong_paths, wrong_members = member_stats.repair()
        for (project, user), (was, now) in sorted(wrong_paths.items()):
            self.stdout.write(f"{project}: user {user}'s paths in: {was} -> {now}")
        for project, (was, now) in sorted(wrong_members.items()):
            self.stdout.write(f"{project}: members: {was} -> {now}")
        redraw_list_versions()
        total = sum(map(len, (wrong_counts, wrong_days, wrong_times, wrong_paths, wrong_members)))
        self.stdout.write(
            f"Repaired {total} project figures."
            if total
            else "Every project figure equals a recomputation from the rows."
        )


def _times(pair: tuple) -> str:
    return ", ".join(moment.isoformat() if moment else "none" for moment in pair)
