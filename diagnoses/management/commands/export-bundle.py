"""``manage.py export-bundle ATTEMPT OUT_DIR``: write a stored attempt's bundle back out (docs/bundles.md).

``ATTEMPT`` is the attempt's id or ``CLUSTER/JOB_ID[#ATTEMPT]``. ``manage.py diagnose OUT_DIR`` then
gives the stored diagnosis, byte for byte.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from diagnoses import bundle_store
from diagnoses.selectors import attempt_find


class Command(BaseCommand):
    help = "Write a stored attempt's bundle to OUT_DIR (which must not exist)."

    def add_arguments(self, parser):
        parser.add_argument("attempt", help="the attempt's id, or CLUSTER/JOB_ID[#ATTEMPT]")
        parser.add_argument("out_dir", help="where to write the bundle (must not exist)")

    def handle(self, *args, attempt, out_dir, **options):
        found = attempt_find(attempt)
        if found is None:
            raise CommandError(f"no stored attempt {attempt!r}")
        target = Path(out_dir)
        if target.exists():
            raise CommandError(f"{target}: already exists")
        bundle_store.export(found.bundle, target)
        self.stdout.write(f"{found}: bundle written to {target}")
