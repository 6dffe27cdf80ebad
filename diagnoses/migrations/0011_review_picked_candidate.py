"""A review that picks one of the diagnosis's own candidates (``Review.picked_candidate``), marked for the reviews
already stored too: the overview counts such a pick as agreeing with the engine, not as a correction."""

import json

from django.db import migrations, models

from diagnoses.services.reviews import candidate_picked


def mark(apps, schema_editor):
    Review = apps.get_model("diagnoses", "Review")
    corrections = Review.objects.filter(verdict="corrected", corrected_outcome="attributed").select_related("diagnosis")
    picked = []
    for review in corrections.iterator(chunk_size=500):
        fields = ("corrected_outcome", "corrected_domain", "corrected_subdomain", "corrected_nodes")
        if candidate_picked(json.loads(review.diagnosis.document_json), {f: getattr(review, f) for f in fields}):
            picked.append(review.pk)
    Review.objects.filter(pk__in=picked).update(picked_candidate=True)


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0010_event_counts"),
    ]

    operations = [
        migrations.AddField(
            model_name="review",
            name="picked_candidate",
            field=models.BooleanField(
                default=False,
                help_text="A correction to one of the diagnosis's own candidates: it agrees with the engine (docs/api.md)",
            ),
        ),
        migrations.RunPython(mark, migrations.RunPython.noop),
    ]
