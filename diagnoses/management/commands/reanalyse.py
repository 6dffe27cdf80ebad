"""``manage.py reanalyse [--all | --since DATE | --cluster NAME]``: queue analyses with the active rule set."""

from datetime import datetime, time

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import is_naive, make_aware

from diagnoses.models import Attempt
from diagnoses.services.attempts import attempts_reanalyse


class Command(BaseCommand):
    help = "Queue stored attempts for analysis with the active rule set."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="every stored attempt")
        which.add_argument("--since", metavar="DATE", help="attempts that ended on or after DATE (ISO 8601)")
        which.add_argument("--cluster", metavar="NAME", help="the attempts of one cluster")

    def handle(self, *args, all, since, cluster, **options):
        attempts = Attempt.objects.all()
        if since:
            attempts = attempts.filter(end__gte=self.moment(since))
        if cluster:
            if not Attempt.objects.filter(cluster__name=cluster).exists():
                raise CommandError(f"--cluster {cluster!r}: no stored attempts on this cluster")
            attempts = attempts.filter(cluster__name=cluster)
        count = attempts_reanalyse(attempts=attempts)
        self.stdout.write(f"{count} attempt(s) queued for analysis")

    def moment(self, text: str) -> datetime:
        try:
            moment = parse_datetime(text)
            day = None if moment else parse_date(text)
        except ValueError:
            moment = day = None
        if day is not None:
            moment = datetime.combine(day, time())
        if moment is None:
            raise CommandError(f"--since {text!r}: not an ISO 8601 date or time")
        return make_aware(moment) if is_naive(moment) else moment
