"""Indexes for the pages: one (column, id) index per sortable column of the job list (seek pagination
reads a page by position in that order), and on PostgreSQL trigram indexes for the job list's search
on job names and ids (``icontains``: ``UPPER(column) LIKE UPPER('%term%')``)."""

from django.db import migrations, models

TRIGRAM_INDEXES = {
    "job_name_trgm": "diagnoses_job USING gin (UPPER(name::text) gin_trgm_ops)",
    "job_job_id_trgm": "diagnoses_job USING gin (UPPER(job_id::text) gin_trgm_ops)",
}


def create_trigram_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite (the embedded default) searches by scanning
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, definition in TRIGRAM_INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {definition}")


def drop_trigram_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in TRIGRAM_INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0003_cluster_discovery"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="attempt", name="attempt_end"),
        migrations.RemoveIndex(model_name="attempt", name="attempt_state"),
        migrations.RemoveIndex(model_name="attempt", name="attempt_user"),
        migrations.AddIndex(model_name="attempt", index=models.Index(fields=["-end", "-id"], name="attempt_end_id")),
        migrations.AddIndex(model_name="attempt", index=models.Index(fields=["state", "id"], name="attempt_state_id")),
        migrations.AddIndex(model_name="attempt", index=models.Index(fields=["user", "id"], name="attempt_user_id")),
        migrations.AddIndex(model_name="attempt", index=models.Index(fields=["name", "id"], name="attempt_name_id")),
        migrations.RunPython(create_trigram_indexes, drop_trigram_indexes),
    ]
