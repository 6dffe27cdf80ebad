"""Regression cases and batch runs now belong to the workbench app (its migration 0001 renames their
tables and moves their content types); the rules app forgets them."""

from django.db import migrations

MOVED = ("regressioncase", "batchrun")


def forget_content_types(apps, schema_editor):
    """A content type of a moved model still named for rules (a permission grant that ran while rules still
    had the model would have made one) is a duplicate of the workbench's."""
    content_types = apps.get_model("contenttypes", "ContentType").objects
    for model in MOVED:
        if content_types.filter(app_label="workbench", model=model).exists():
            content_types.filter(app_label="rules", model=model).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("rules", "0002_workbench"),
        ("workbench", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="BatchRun"), migrations.DeleteModel(name="RegressionCase")],
        ),
        migrations.RunPython(forget_content_types, migrations.RunPython.noop),
    ]
