"""Approximate times (docs/rules.md, "Time"): evidence and node events keep whether their time was read from the
line itself, and for a time that was not, the interval it lies in, so the pages can show it as approximate."""

from django.db import migrations, models


def fields(model: str) -> list:
    return [
        migrations.AddField(
            model_name=model,
            name="time_approx",
            field=models.BooleanField(
                default=False, help_text="The line carries no exact time of its own: time is its earliest bound"
            ),
        ),
        migrations.AddField(
            model_name=model,
            name="time_low",
            field=models.DateTimeField(blank=True, help_text="An approximate time's earliest bound", null=True),
        ),
        migrations.AddField(
            model_name=model,
            name="time_high",
            field=models.DateTimeField(blank=True, help_text="An approximate time's latest bound", null=True),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0006_flight_recorder_summary"),
    ]

    operations = [*fields("evidence"), *fields("nodeevent")]
