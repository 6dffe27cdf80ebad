"""The rule workbench's models move here from the rules app (they hold stored attempts as well as rule-set
revisions): the tables ``rules_regressioncase`` and ``rules_batchrun`` are renamed, their content types
follow (and with them their permissions and the roles' grants, which keep their rows), and the rows of the
tables stay as they are."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MODELS = ("regressioncase", "batchrun")


def move_content_types(apps, schema_editor, source: str, target: str) -> None:
    """Give the models' content types (and with them their permissions) to the ``target`` app."""
    content_types = apps.get_model("contenttypes", "ContentType").objects
    for model in MODELS:
        if not content_types.filter(app_label=target, model=model).exists():
            content_types.filter(app_label=source, model=model).update(app_label=target)


def forwards(apps, schema_editor):
    move_content_types(apps, schema_editor, "rules", "workbench")


def backwards(apps, schema_editor):
    move_content_types(apps, schema_editor, "workbench", "rules")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("rules", "0002_workbench"),
        ("diagnoses", "0005_connector_names"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="BatchRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "kind",
                            models.CharField(
                                choices=[("backtest", "Backtest"), ("reanalysis", "Reanalysis")], max_length=12
                            ),
                        ),
                        (
                            "filters",
                            models.JSONField(
                                blank=True, default=dict, help_text="The attempt filters (diagnoses.filters)"
                            ),
                        ),
                        ("limit", models.PositiveIntegerField(help_text="The most attempts the run examines")),
                        (
                            "time_limit",
                            models.PositiveIntegerField(help_text="Seconds after which the run stops where it is"),
                        ),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("cancelled", "Cancelled"),
                                    ("failed", "Failed"),
                                ],
                                default="queued",
                                max_length=10,
                            ),
                        ),
                        ("total", models.PositiveIntegerField(default=0)),
                        ("done", models.PositiveIntegerField(default=0)),
                        ("cancel_requested", models.BooleanField(default=False)),
                        (
                            "stopped_reason",
                            models.TextField(blank=True, help_text="Why the run stopped early or failed"),
                        ),
                        ("result", models.JSONField(blank=True, default=dict)),
                        ("created", models.DateTimeField(default=django.utils.timezone.now)),
                        ("started", models.DateTimeField(blank=True, null=True)),
                        ("finished", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "revision",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="batch_runs",
                                to="rules.rulesetrevision",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created", "-pk"],
                    },
                ),
                migrations.CreateModel(
                    name="RegressionCase",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200, unique=True)),
                        (
                            "bundle",
                            models.CharField(
                                help_text="The copied bundle under the bundle root", max_length=200, unique=True
                            ),
                        ),
                        ("expected_outcome", models.CharField(max_length=12)),
                        ("expected_domain", models.CharField(blank=True, max_length=40)),
                        ("expected_subdomain", models.CharField(blank=True, max_length=80)),
                        ("expected_nodes", models.JSONField(blank=True, default=list)),
                        ("created", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "attempt",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="regression_cases",
                                to="diagnoses.attempt",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "review",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="regression_cases",
                                to="diagnoses.review",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["name"],
                    },
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE rules_batchrun RENAME TO workbench_batchrun",
                    "ALTER TABLE workbench_batchrun RENAME TO rules_batchrun",
                ),
                migrations.RunSQL(
                    "ALTER TABLE rules_regressioncase RENAME TO workbench_regressioncase",
                    "ALTER TABLE workbench_regressioncase RENAME TO rules_regressioncase",
                ),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
