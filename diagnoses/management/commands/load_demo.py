"""``manage.py load_demo``: write the demo data set (``demo.dataset``) and ingest it."""

import tempfile
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils import timezone

from diagnoses.models import Attempt


class Command(BaseCommand):
    help = "Generate the demo bundles (a few dozen failed attempts on two clusters) and ingest them."

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--if-empty", action="store_true", help="do nothing when attempts are already stored")

    def handle(self, *args, seed, if_empty, **options):
        from demo.dataset import write_demo_set  # the demo package generates the data set

        if if_empty and Attempt.objects.exists():
            self.stdout.write("attempts are already stored; demo data not loaded again")
            return
        with tempfile.TemporaryDirectory(prefix="faultline-demo-") as root:
            written = write_demo_set(Path(root), seed=seed, now=timezone.now())
            self.stdout.write(f"{len(written)} demo bundles written")
            call_command("ingest", *map(str, written), verbosity=options["verbosity"], stdout=self.stdout)
