"""What the analysis of an attempt's Flight Recorder dumps found, recorded with its diagnosis for the attempt page."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0005_connector_names"),
    ]

    operations = [
        migrations.CreateModel(
            name="FlightRecorderSummary",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("summary", models.JSONField()),
                (
                    "diagnosis",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="flight_recorder",
                        to="diagnoses.diagnosis",
                    ),
                ),
            ],
        ),
    ]
