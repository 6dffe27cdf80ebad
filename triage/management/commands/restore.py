"""``manage.py restore DIR``: put a backup of ``manage.py backup`` back (triage/backups.py)."""

from django.core.management.base import BaseCommand, CommandError

from triage.backups import BackupError, restore


class Command(BaseCommand):
    help = (
        "Restore the backup in DIR: its bundles into the bundle store, then its database content in place of this "
        "database's (stop the web and worker processes first)."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="a folder written by `manage.py backup`")
        parser.add_argument("--yes", action="store_true", help="replace this database's content without asking")

    def handle(self, *args, folder, yes, **options):
        if not yes and input(f"Replace this site's database with the backup in {folder}? [y/N] ").lower() != "y":
            raise CommandError("not restored")
        try:
            manifest = restore(folder)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{folder}: restored the database and {len(manifest['bundles'])} bundles")
