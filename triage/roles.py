"""Roles are Django groups (created by ``diagnoses/migrations/0002_roles.py``), each a set of permissions.

- viewer: reads everything (any signed-in user may read; the group makes it explicit);
- triager: also uploads attempts, re-analyses them and reviews diagnoses;
- rule editor: also edits rule sets (the rule workbench);
- admin: every permission of Faultline's apps.
"""

VIEWER = "viewer"
TRIAGER = "triager"
RULE_EDITOR = "rule editor"
ADMIN = "admin"

ROLE_PERMISSIONS = {
    VIEWER: ["diagnoses.view_*", "rules.view_*"],
    TRIAGER: ["diagnoses.view_*", "rules.view_*", "diagnoses.add_attempt", "diagnoses.change_attempt",
              "diagnoses.add_review"],
    RULE_EDITOR: ["diagnoses.view_*", "rules.view_*", "rules.add_*", "rules.change_*"],
    ADMIN: ["diagnoses.*", "rules.*"],
}  # fmt: skip
