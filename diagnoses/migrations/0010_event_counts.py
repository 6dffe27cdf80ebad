"""The counts of what happened (``EventCount``), the counters of /metrics; the daily rollup of the verdicts loses the
analysis latency (/metrics observes the time to a first diagnosis once, as an event count) and is built again."""

from django.db import migrations, models

from access.roles import grant_role_permissions
from diagnoses.services.verdict_days import verdict_days_rebuild


def empty(apps, schema_editor):
    """The rollup's rows go before its key changes (they are built again after it; going back to 0009 leaves it empty:
    ``manage.py verdict_days`` builds it there)."""
    apps.get_model("diagnoses", "VerdictDay").objects.all().delete()


def build(apps, schema_editor):
    """The rollup of the attempts stored (set-wise: one grouped read, rows written in batches), after the schema
    changes: PostgreSQL alters no table with rows written in the same transaction."""
    verdict_days_rebuild(*(apps.get_model("diagnoses", name) for name in ("Attempt", "VerdictDay", "VerdictNodeDay")))


def grant_roles(apps, schema_editor):
    grant_role_permissions(apps)  # the admin role gets diagnoses.read_metrics


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0009_verdict_day"),
    ]

    operations = [
        migrations.RunPython(empty, empty),
        migrations.RemoveConstraint(model_name="verdictday", name="diagnoses_verdictday_key"),
        migrations.RemoveField(model_name="verdictday", name="latency"),
        migrations.RemoveField(model_name="verdictday", name="latency_us"),
        migrations.AddConstraint(
            model_name="verdictday",
            constraint=models.UniqueConstraint(
                fields=("day", "cluster", "outcome", "domain", "subdomain", "needs_review"),
                name="diagnoses_verdictday_key",
            ),
        ),
        migrations.RunPython(build, empty),
        migrations.CreateModel(
            name="EventCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=60)),
                (
                    "labels",
                    models.CharField(help_text="The labels, a JSON object with its keys sorted", max_length=500),
                ),
                ("value", models.FloatField(default=0)),
            ],
            options={
                "permissions": [("read_metrics", "Read /metrics when signed in (a scraper presents the token)")],
                "constraints": [models.UniqueConstraint(fields=("name", "labels"), name="diagnoses_eventcount_key")],
            },
        ),
        migrations.RunPython(grant_roles, migrations.RunPython.noop),
    ]
