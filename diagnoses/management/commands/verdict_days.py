"""``manage.py verdict_days [--check]``: build the daily rollup of the verdicts of record again from the attempts."""

from django.core.management.base import BaseCommand, CommandError

from diagnoses.services.verdict_days import (
    verdict_days_counted,
    verdict_days_rebuild,
    verdict_days_stored,
    verdict_node_days_counted,
    verdict_node_days_stored,
)


class Command(BaseCommand):
    help = (
        "Build the daily rollups that the overview and /metrics read (diagnoses.VerdictDay, VerdictNodeDay) again "
        "from the attempts; --check compares them with the attempts instead and fails when they differ."
    )

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="compare only, change nothing")

    def handle(self, *args, check, **options):
        if check:
            rows = 0
            for stored, counted in ((verdict_days_stored(), verdict_days_counted()),
                                    (verdict_node_days_stored(), verdict_node_days_counted())):  # fmt: skip
                wrong = sorted(key for key in stored.keys() | counted.keys() if stored.get(key) != counted.get(key))
                if wrong:
                    raise CommandError(f"{len(wrong)} row(s) of the rollup differ from the attempts, first {wrong[0]}")
                rows += len(stored)
            self.stdout.write(f"the rollup matches the attempts ({rows} rows)")
            return
        rows = verdict_days_rebuild()
        self.stdout.write(f"the rollup was built again from the attempts: {rows} rows")
