"""``manage.py prune_bundles [--days N] [--dry-run]``: remove old attempts' bundles, keep their diagnoses."""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from diagnoses.services.retention import bundles_prune


class Command(BaseCommand):
    help = "Remove the bundles (raw logs) of attempts that ended more than N days ago; diagnoses and evidence stay."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, help="default: FAULTLINE_RETENTION_DAYS")
        parser.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")

    def handle(self, *args, days, dry_run, **options):
        days = settings.FAULTLINE_RETENTION_DAYS if days is None else days
        if days <= 0:
            raise CommandError("no retention period: give --days N or set FAULTLINE_RETENTION_DAYS")
        pruned = bundles_prune(before=timezone.now() - timedelta(days=days), dry_run=dry_run)
        verb = "would be removed" if dry_run else "removed"
        self.stdout.write(f"{len(pruned)} bundle(s) of attempts that ended more than {days} days ago {verb}")
