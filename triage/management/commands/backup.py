"""``manage.py backup DIR``: the database and the bundles it points to, as one consistent pair (triage/backups.py)."""

from django.core.management.base import BaseCommand, CommandError

from triage.backups import BackupError, backup


class Command(BaseCommand):
    help = "Back up the database and its bundles into DIR (new or empty); `manage.py restore DIR` puts them back."

    def add_arguments(self, parser):
        parser.add_argument("folder", help="where to write the backup (a new or empty folder)")

    def handle(self, *args, folder, **options):
        try:
            manifest = backup(folder)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        missing = f", {len(manifest['missing'])} not stored (not gathered yet, or past retention)"
        self.stdout.write(
            f"{folder}: the {manifest['database']} database and {len(manifest['bundles'])} bundles"
            + (missing if manifest["missing"] else "")
        )
