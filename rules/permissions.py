"""The permissions behind the writes of rule sets (granted to the rule editor and admin roles,
``access/roles.py``); viewers and triagers only read. The workbench's pages and the API check the same
names (the workbench's own: ``workbench/permissions.py``)."""

EDIT_RULES = "rules.add_rulesetrevision"  # create rule sets and revisions (drafts)
ACTIVATE = "rules.add_activation"  # activate a revision (or roll back to an older one)
