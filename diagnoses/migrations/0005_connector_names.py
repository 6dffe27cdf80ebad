"""Connector kinds named for what they are: ``localfiles`` (no scheduler) is ``uploads``, ``bundles`` (a
watched folder) is ``folder``, ``files`` (log files) is ``logfiles``. The old names stay accepted as
input (``connectors.base.ALIASES``, ``diagnoses.cluster_connectors.OLD_NAMES``)."""

from django.db import migrations, models

CLUSTER_CONNECTORS = {"localfiles": "uploads", "bundles": "folder"}
SOURCE_KINDS = {"files": "logfiles"}


def rename(apps, connectors: dict[str, str], kinds: dict[str, str]) -> None:
    for old, new in connectors.items():
        apps.get_model("diagnoses", "Cluster").objects.filter(connector=old).update(connector=new)
    for old, new in kinds.items():
        apps.get_model("diagnoses", "Source").objects.filter(kind=old).update(kind=new)


def forwards(apps, schema_editor):
    rename(apps, CLUSTER_CONNECTORS, SOURCE_KINDS)


def backwards(apps, schema_editor):
    rename(apps, {v: k for k, v in CLUSTER_CONNECTORS.items()}, {v: k for k, v in SOURCE_KINDS.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0004_page_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="cluster",
            name="connector",
            field=models.CharField(
                default="uploads",
                help_text="The scheduler connector: slurm, kueue, folder (a watched folder of bundles) or an allowed "
                "dotted path; uploads: no scheduler, attempts arrive as uploaded bundles",
                max_length=200,
            ),
        ),
        migrations.AlterField(
            model_name="source",
            name="kind",
            field=models.CharField(help_text="logfiles, loki, prometheus or an allowed dotted path", max_length=200),
        ),
        migrations.RunPython(forwards, backwards),
    ]
