"""The daily rollups of the verdicts of record (``VerdictDay``, ``VerdictNodeDay``), built from the stored attempts."""

import django.db.models.deletion
from django.db import migrations, models

COVERING = "verdictnodeday_day_node_attempts"  # the sums over a window read from the index alone (PostgreSQL)


def covering_create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":  # SQLite (the embedded default) has no INCLUDE
        schema_editor.execute(f"CREATE INDEX {COVERING} ON diagnoses_verdictnodeday (day, node_id) INCLUDE (attempts)")


def covering_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {COVERING}")


def build(apps, schema_editor):
    """Nothing: 0010 builds the rollup of the attempts already stored, once the latency left its key (the service that
    builds it knows only the columns of now)."""


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0008_verdict"),
    ]

    operations = [
        migrations.CreateModel(
            name="VerdictDay",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                (
                    "outcome",
                    models.CharField(blank=True, help_text="The verdict of record's ('': none yet)", max_length=12),
                ),
                ("domain", models.CharField(blank=True, max_length=40)),
                ("subdomain", models.CharField(blank=True, max_length=80)),
                ("needs_review", models.BooleanField()),
                (
                    "latency",
                    models.SmallIntegerField(
                        help_text="The first bucket of LATENCY_BUCKETS the analysis latency fits in "
                        "(len(LATENCY_BUCKETS): above them all; -1: not analysed)"
                    ),
                ),
                ("attempts", models.IntegerField(default=0)),
                (
                    "latency_us",
                    models.BigIntegerField(default=0, help_text="The sum of these attempts' latencies (microseconds)"),
                ),
                (
                    "cluster",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="diagnoses.cluster"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("day", "cluster", "outcome", "domain", "subdomain", "needs_review", "latency"),
                        name="diagnoses_verdictday_key",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="VerdictNodeDay",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("attempts", models.IntegerField(default=0)),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="diagnoses.node"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("day", "node"), name="diagnoses_verdictnodeday_key")],
            },
        ),
        migrations.RunPython(covering_create, covering_drop),
        migrations.RunPython(build, migrations.RunPython.noop),
    ]
