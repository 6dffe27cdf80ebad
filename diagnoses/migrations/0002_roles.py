"""The roles (viewer, triager, rule editor, admin) as groups with their permissions (access/roles.py)."""

from django.db import migrations

from access.roles import ROLE_PERMISSIONS, grant_role_permissions


def create_roles(apps, schema_editor):
    grant_role_permissions(apps)


def delete_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLE_PERMISSIONS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("diagnoses", "0001_initial"),
        ("rules", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, delete_roles)]
