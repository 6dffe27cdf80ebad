"""``manage.py ingest PATH...``: store the attempts of bundles (or folders of bundles) and queue their analysis."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from diagnoses.bundle_store import BundleRejected
from diagnoses.services import attempts
from engine.bundle import ATTEMPT_FILE


def find_bundles(paths: list[str]) -> list[Path]:
    """Each path is a bundle (holds attempt.json) or a folder searched for bundles."""
    found = []
    for raw in paths:
        path = Path(raw)
        if (path / ATTEMPT_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(file.parent for file in path.rglob(ATTEMPT_FILE)))
        else:
            raise CommandError(f"{path}: neither a bundle nor a folder of bundles")
    return found


class Command(BaseCommand):
    help = "Store the attempts of bundle directories (or folders of bundles) and queue their analysis."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="a bundle directory or a folder of bundles")
        parser.add_argument("--no-analyse", action="store_true", help="store only; `reanalyse` queues them later")
        parser.add_argument("--history", action="store_true",
                            help="write the store's history of each attempt's nodes and job into a bundle without "
                                 "history/ (docs/bundles.md), as gathering does")  # fmt: skip

    def handle(self, *args, paths, no_analyse, history, **options):
        found = find_bundles(paths)
        stored = duplicates = rejected = 0
        for bundle in tqdm(found, desc="ingest", unit="bundle", disable=options["verbosity"] < 1):
            try:
                attempts.attempt_ingest_directory(path=bundle, analyse=not no_analyse, history=history)
                stored += 1
            except attempts.DuplicateAttempt as exc:
                duplicates += 1
                self.stderr.write(f"{bundle}: skipped, {exc}")
            except BundleRejected as exc:
                rejected += 1
                self.stderr.write(f"{bundle}: rejected: {exc}")
        self.stdout.write(f"{stored} stored, {duplicates} already stored, {rejected} rejected")
        if rejected:
            raise CommandError(f"{rejected} bundle(s) rejected")
