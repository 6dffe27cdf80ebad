"""``manage.py demo_cases OUT_DIR [--seeds N]``: regression cases from the demo catalogue.

Writes every demo failure kind for seeds 1..N (the seed also picks the scheduler of kinds that run on
both), each bundle with an ``expected.json`` holding its intended outcome, domain, subdomain and nodes:
the layout ``manage.py test_rules --cases OUT_DIR`` runs. CI runs the default pack against them.
"""

import json
import shutil
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from demo.bundles import KINDS, example
from workbench.regression import EXPECTED_FILE


class Command(BaseCommand):
    help = "Write every demo failure kind, with its intended diagnosis in expected.json, as regression cases."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("out_dir", help="an empty or new directory (a previous demo_cases directory is replaced)")
        parser.add_argument("--seeds", type=int, default=2, help="bundles per kind (seeds 1..N)")

    def handle(self, *args, out_dir, seeds, **options):
        root = Path(out_dir)
        if root.exists() and any(root.iterdir()) and not all((p / EXPECTED_FILE).is_file() for p in root.iterdir()):
            sys.stderr.write(f"demo_cases: {root} holds other things than cases; choose an empty or new directory\n")
            sys.exit(2)
        shutil.rmtree(root, ignore_errors=True)
        count = 0
        for kind in KINDS:
            for seed in range(1, seeds + 1):
                written = example(kind, seed, root / f"{kind}-{seed}")
                expected = {
                    "outcome": written.outcome,
                    "domain": written.domain,
                    "subdomain": written.subdomain,
                    "nodes": sorted(written.nodes),
                }
                (written.path / EXPECTED_FILE).write_text(json.dumps(expected, indent=1) + "\n")
                count += 1
        self.stdout.write(f"{count} cases in {root}")
