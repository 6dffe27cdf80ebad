"""Roles are Django groups (created by ``diagnoses/migrations/0002_roles.py``), each a set of permissions.

- viewer: reads everything (any signed-in user may read; the group makes it explicit);
- triager: also uploads attempts, re-analyses them, reviews diagnoses and proposes node drains;
- rule editor: also edits rule sets (the rule workbench);
- admin: every permission of Faultline's apps (among them: approving and resuming drains, drain policies,
  notification rules).
"""

VIEWER = "viewer"
TRIAGER = "triager"
RULE_EDITOR = "rule editor"
ADMIN = "admin"

APPS = ("diagnoses", "rules", "workbench", "handoffs")  # the apps whose permissions the roles grant
ROLE_PERMISSIONS = {
    VIEWER: ["diagnoses.view_*", "rules.view_*", "workbench.view_*", "handoffs.view_*"],
    TRIAGER: ["diagnoses.view_*", "rules.view_*", "workbench.view_*", "handoffs.view_*", "diagnoses.add_attempt",
              "diagnoses.change_attempt", "diagnoses.add_review", "handoffs.add_drain"],
    RULE_EDITOR: ["diagnoses.view_*", "rules.view_*", "workbench.view_*", "handoffs.view_*", "rules.add_*",
                  "rules.change_*", "workbench.add_*", "workbench.change_*"],
    ADMIN: ["diagnoses.*", "rules.*", "workbench.*", "handoffs.*"],
}  # fmt: skip


def grant_role_permissions(apps) -> None:
    """Create the role groups (when missing) and give each the permissions its patterns match; a migration
    that adds models runs this again so that the roles cover them."""
    from django.contrib.auth.management import create_permissions

    for config in apps.get_app_configs():  # permissions are normally created after the last migration
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    assign_role_permissions(apps.get_model("auth", "Group"), apps.get_model("auth", "Permission"))


def assign_role_permissions(group_model, permission_model) -> None:
    """Give each role group (created when missing) the existing permissions its patterns match.

    Tests call it with the real models to restore the groups a transactional test's flush removed.
    """
    from fnmatch import fnmatchcase

    permissions = {
        f"{p.content_type.app_label}.{p.codename}": p
        for p in permission_model.objects.filter(content_type__app_label__in=APPS).select_related("content_type")
    }
    for role, patterns in ROLE_PERMISSIONS.items():
        group, _ = group_model.objects.get_or_create(name=role)
        group.permissions.set(p for name, p in permissions.items() if any(fnmatchcase(name, x) for x in patterns))
