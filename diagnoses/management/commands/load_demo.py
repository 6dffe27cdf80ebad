"""``manage.py load_demo``: write the demo data set (``demo.dataset``) and ingest it; its cluster ``dgx-a`` gets the
demo scheduler (``connectors/demo.py``), so that drains can be proposed, approved, run and resumed from ``make run``
without a cluster: each is recorded in ``demo-scheduler/.demo-nodes.json`` beside the bundle store (``var/`` under
``make run``), and no node is touched."""

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils import timezone

from diagnoses.cluster_connectors import DEMO_SCHEDULER
from diagnoses.models import Attempt, Cluster
from diagnoses.services import clusters

DEMO_CLUSTER = "dgx-a"  # its repeat offenders make the drains and the circuit breaker worth trying


class Command(BaseCommand):
    help = (
        "Generate the demo bundles (a few dozen failed attempts on three clusters) and ingest them; dgx-a gets the "
        "demo scheduler, which records drains and resumes in a file (no node is touched)."
    )

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
        folder = Path(settings.FAULTLINE_BUNDLE_ROOT).parent / "demo-scheduler"
        folder.mkdir(parents=True, exist_ok=True)
        clusters.cluster_configure(
            cluster=Cluster.objects.get(name=DEMO_CLUSTER),
            connector=DEMO_SCHEDULER,
            scheduler_settings={"path": str(folder), "settle_seconds": 5},
            enabled=True,
            poll_interval=60,
            gather_delay=0,
        )
        self.stdout.write(
            f"{DEMO_CLUSTER}'s scheduler is the demo scheduler: drains and resumes are recorded in "
            f"{folder / '.demo-nodes.json'} (no node is touched); bundles dropped in {folder} are discovered"
        )
