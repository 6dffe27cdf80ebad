"""The roles (viewer, triager, rule editor, admin) as groups with their permissions (triage/roles.py)."""

from fnmatch import fnmatchcase

from django.contrib.auth.management import create_permissions
from django.db import migrations

from triage.roles import ROLE_PERMISSIONS


def create_roles(apps, schema_editor):
    for config in apps.get_app_configs():  # permissions are normally created after the last migration
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permissions = {
        f"{p.content_type.app_label}.{p.codename}": p
        for p in Permission.objects.filter(content_type__app_label__in=["diagnoses", "rules"]).select_related(
            "content_type"
        )
    }
    for role, patterns in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set(p for name, p in permissions.items() if any(fnmatchcase(name, x) for x in patterns))


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
