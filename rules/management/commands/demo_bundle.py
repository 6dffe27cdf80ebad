"""``manage.py demo_bundle OUT_DIR [--kind KIND] [--seed N]`` writes one demo attempt bundle; ``--list`` the kinds.

The bundle is a pure function of the kind and the seed (no clock, no network, no database). A directory
that already holds a bundle has its bundle replaced; any other non-empty directory is refused.
"""

import shutil
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from demo.bundles import KINDS, example

BUNDLE_PARTS = ("attempt.json", "logs", "events", "metrics")


class Command(BaseCommand):
    help = "Write one realistic demo attempt bundle of a known failure kind and print its path."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("out_dir", nargs="?", help="the directory to write the bundle into")
        parser.add_argument("--kind", default="gpu-fallen-off-bus", help="the failure kind (see --list)")
        parser.add_argument("--seed", type=int, default=1, help="varies nodes, job id, times, time zone, log forms")
        parser.add_argument(
            "--list", action="store_true", dest="list_kinds", help="list the failure kinds and their intended diagnoses"
        )

    def handle(self, *args, out_dir, kind, seed, list_kinds, **options):
        if list_kinds:
            for spec in KINDS.values():
                intended = spec.outcome if spec.outcome != "attributed" else f"{spec.domain}/{spec.subdomain}"
                self.stdout.write(f"{spec.name:26} {','.join(spec.schedulers):12} {intended:28} {spec.title}")
            return
        if not out_dir:
            self.fail("give OUT_DIR (or --list)")
        if kind not in KINDS:
            self.fail(f"unknown kind {kind!r}; --list shows the kinds")
        directory = Path(out_dir)
        if directory.exists():
            if not directory.is_dir():
                self.fail(f"{directory} is not a directory")
            if any(directory.iterdir()) and not (directory / "attempt.json").is_file():
                self.fail(f"{directory} is not empty and holds no bundle; choose an empty or new directory")
            for part in BUNDLE_PARTS:
                path = directory / part
                if path.is_dir():
                    shutil.rmtree(path)
                elif path.exists():
                    path.unlink()
        written = example(kind, seed, directory)
        self.stdout.write(str(written.path))

    def fail(self, message: str):
        sys.stderr.write(f"demo_bundle: {message}\n")
        sys.exit(2)
