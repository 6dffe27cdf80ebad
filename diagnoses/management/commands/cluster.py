"""``manage.py cluster add|list|poll``: configure a cluster's connectors, see its discovery, poll it now.

    manage.py cluster add dgx-a slurm '{"command_prefix": ["ssh", "dgx-login"]}' \\
        --logs syslog files '{"paths": {"syslog": "/srv/rsyslog/{node}/syslog.log"}}' \\
        --metrics prometheus prometheus '{"url": "http://prometheus:9090"}'
    manage.py cluster list
    manage.py cluster poll dgx-a

Settings are JSON objects, checked as the admin and the API check them (docs/connectors.md).
"""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from diagnoses import selectors
from diagnoses.models import Cluster, Source
from diagnoses.services import clusters, discovery


def json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"not valid JSON ({exc}): {text}") from None
    if not isinstance(value, dict):
        raise CommandError(f"settings must be a JSON object: {text}")
    return value


class Command(BaseCommand):
    help = "Configure a cluster's connectors (add), list clusters with their discovery status, poll one now."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="command", required=True)
        add = commands.add_parser("add", help="add a cluster with its scheduler and sources (discovery on)")
        add.add_argument("name")
        add.add_argument(
            "scheduler", help="slurm, kueue, folder (a watched folder of bundles) or an allowed dotted path"
        )
        add.add_argument("scheduler_settings", nargs="?", default="{}", type=json_object, metavar="SETTINGS",
                         help="the scheduler's settings (a JSON object)")  # fmt: skip
        for role in Source.Role.values:
            add.add_argument(
                f"--{role}",
                nargs=3,
                action="append",
                default=[],
                metavar=("NAME", "KIND", "SETTINGS"),
                help=f"a {role} source: its name, kind and settings (JSON object); repeatable",
            )
        add.add_argument("--interval", type=int, default=300, help="seconds between polls (default 300)")
        add.add_argument("--gather-delay", type=int, default=60, help="seconds after an attempt ends before gathering")
        add.add_argument("--disabled", action="store_true", help="configure only; discovery stays off")
        commands.add_parser("list", help="the clusters and where their discovery stands")
        poll = commands.add_parser("poll", help="poll a cluster's scheduler now, in this process")
        poll.add_argument("name")

    def handle(self, *args, command, **options):
        {"add": self.add_cluster, "list": self.list_clusters, "poll": self.poll_cluster}[command](**options)

    def add_cluster(self, *, name, scheduler, scheduler_settings, interval, gather_delay, disabled, **options):
        sources = [
            {"role": role, "name": source, "kind": kind, "settings": json_object(values)}
            for role in Source.Role.values
            for source, kind, values in options[role]
        ]
        try:
            cluster = clusters.cluster_configure(
                name=name,
                connector=scheduler,
                scheduler_settings=scheduler_settings,
                enabled=not disabled,
                poll_interval=interval,
                gather_delay=gather_delay,
                sources=sources,
            )
        except ValidationError as exc:
            problems = [f"{field}: {message}" for field, errors in exc.message_dict.items() for message in errors]
            raise CommandError("the cluster is not valid:\n  " + "\n  ".join(problems)) from None
        state = "discovery on" if cluster.enabled else "discovery off"
        self.stdout.write(f"{cluster.name}: {cluster.connector} with {len(sources)} source(s), {state}")

    def list_clusters(self, **options):
        now = timezone.now()
        for cluster in selectors.cluster_status_list():
            status = selectors.cluster_status(cluster, now=now)
            lag = "never" if status["lag_seconds"] is None else f"{status['lag_seconds']} s ago"
            line = f"{cluster.name}\t{cluster.connector}\t{status['state']}\tlast success {lag}\t"
            line += f"found {status['last_found']}\tqueued {status['pending']}\tfailed {status['failed']}"
            self.stdout.write(line)
            if status["last_error"]:
                self.stdout.write(f"  error: {status['last_error']}")
            for source in status["sources"]:
                self.stdout.write(f"  {source['role']} {source['name']} ({source['kind']}): {source['state']}")

    def poll_cluster(self, *, name, **options):
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            raise CommandError(f"no cluster {name!r}")
        if not cluster.has_scheduler:
            raise CommandError(f"cluster {name!r} has no scheduler to poll (its connector is {cluster.connector})")
        new = discovery.cluster_poll(cluster_id=cluster.pk)
        cluster.refresh_from_db()
        if new is None and cluster.polling_since is not None:
            raise CommandError(f"cluster {name!r} is being polled already (since {cluster.polling_since:%H:%M:%S}Z)")
        if cluster.failures:
            raise CommandError(f"the poll failed: {cluster.last_error}")
        self.stdout.write(f"{name}: {new} new attempt(s) queued for analysis; {len(cluster.skipped)} record(s) skipped")
        for item in cluster.skipped:
            self.stdout.write(f"  skipped {item}")
