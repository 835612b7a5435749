"""Recount the per-project flag counts from the flags and fix the ones that differ."""

from django.core.management.base import BaseCommand

from features.flag_counts import repair


class Command(BaseCommand):
    help = (
        "Recount the flags of every project (by type and stale state) and fix the stored "
        "counts that differ. Flag writes wait while it runs; safe to run at any time."
    )

    def handle(self, *args, **options) -> None:
        wrong = repair()
        for (project, kind, stale), (was, now) in sorted(wrong.items()):
            state = "stale" if stale else "not stale"
            self.stdout.write(f"{project}: {kind}, {state}: {was} -> {now}")
        self.stdout.write(
            f"Repaired {len(wrong)} flag counts."
            if wrong
            else "Every flag count equals a recount of the flags."
        )
