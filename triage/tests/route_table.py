"""What each role may do on each route: ``{route name: {method: who}}``, checked by ``test_routes.py``.

A method missing from a route's entry answers 405 to everyone signed in (an anonymous request is sent
to the login first). ``who`` names a set of ``ROLES`` or lists roles; anyone else is denied (403, or the
login for an anonymous request). Keep it in step with docs/api.md and docs/workbench.md.
"""

from access.roles import ADMIN, RULE_EDITOR, TRIAGER, VIEWER

SIGNED_IN = (VIEWER, TRIAGER, RULE_EDITOR, ADMIN)
ROLES = {
    "everyone": ("anonymous", *SIGNED_IN),
    "signed in": SIGNED_IN,
    "triage": (TRIAGER, ADMIN),  # upload, reanalyse, review, gather again
    "rules": (RULE_EDITOR, ADMIN),  # edit and activate rule sets, cases, batch runs
    "admin": (ADMIN,),  # clusters, the Django admin
}
READ = {"GET": "signed in"}
NOT_BEHIND_THE_LOGIN = {"metrics"}  # scrapers reach it without a session: another method is 405 for anyone

ROUTES = {
    # the triage pages (read-only but for their forms)
    "pages:overview": READ,
    "pages:job-list": READ,
    "pages:job-export": READ,
    "pages:job-detail": READ,
    "pages:upload": {"GET": "triage", "POST": "triage"},
    "pages:attempt-detail": READ,
    "pages:attempt-changes": READ,
    "pages:attempt-review": {"POST": "triage"},
    "pages:review-withdraw": {"POST": "triage"},
    "pages:review-subdomains": READ,
    "pages:attempt-gather": {"POST": "triage"},
    "pages:attempt-diagnosis-json": READ,
    "pages:attempt-bundle": READ,
    "pages:evidence-context": READ,
    "pages:event-context": READ,
    "pages:lead-context": READ,
    "pages:attempt-leads": {"POST": "triage"},
    "pages:pattern-list": READ,
    "pages:pattern-detail": {"GET": "signed in", "POST": "triage"},
    "pages:triage-queue": READ,
    "pages:node-list": READ,
    "pages:node-detail": READ,
    "pages:search": READ,
    "pages:cluster-status": READ,
    # the hand-offs: notification rules (admin), drains (a triager proposes, an admin approves, resumes, sets policy)
    "pages:notification-list": READ,
    "pages:notification-rule-add": {"POST": "admin"},
    "pages:notification-rule-change": {"POST": "admin"},
    "pages:notification-rule-delete": {"POST": "admin"},
    "pages:notification-rule-test": {"POST": "admin"},
    "pages:drain-list": READ,
    "pages:drain-propose": {"POST": "triage"},
    "pages:drain-approve": {"POST": "admin"},
    "pages:drain-reject": {"POST": "admin"},
    "pages:drain-resume": {"POST": "admin"},
    "pages:drain-policy": {"POST": "admin"},
    # Prometheus: a scraper's bearer token or network (none configured here), or an admin's session
    "metrics": {"GET": "admin"},
    # signing in and out (Django's views: the login form also takes PUT)
    "login": {"GET": "everyone", "POST": "everyone", "PUT": "everyone"},
    "logout": {"POST": "everyone"},
    # the rule workbench
    "workbench:rulesets": READ,
    "workbench:cases": READ,
    "workbench:case-promote": {"POST": "rules"},
    "workbench:reanalyse": {"GET": "signed in", "POST": "rules"},
    "workbench:run": READ,
    "workbench:run-cancel": {"POST": "rules"},
    "workbench:ruleset": READ,
    "workbench:diff": READ,
    "workbench:editor": {"GET": "rules", "POST": "rules"},
    "workbench:editor-check": {"POST": "rules"},
    "workbench:revision": READ,
    "workbench:activate": {"POST": "rules"},
    "workbench:try": READ,
    "workbench:explore": READ,
    "workbench:revision-cases": READ,
    "workbench:backtest": {"GET": "signed in", "POST": "rules"},
    "workbench:pattern-draft": {"GET": "rules", "POST": "rules"},
    "workbench:pattern-trial": READ,
    "workbench:pattern-reanalyse": {"POST": "rules"},
    # the API (each with its .json variant)
    "api:api-root": READ,
    "api:analyze": {"POST": "signed in"},
    "api:cluster-list": {"GET": "signed in", "POST": "admin"},
    "api:cluster-detail": {"GET": "signed in", "PUT": "admin", "PATCH": "admin"},
    "api:cluster-poll": {"POST": "admin"},
    "api:job-list": READ,
    "api:job-detail": READ,
    "api:attempt-list": {"GET": "signed in", "POST": "triage"},
    "api:attempt-detail": READ,
    "api:attempt-reanalyse": {"POST": "triage"},
    "api:attempt-leads": {"GET": "signed in", "POST": "triage"},
    "api:attempt-changes": READ,
    "api:pattern-list": READ,
    "api:pattern-detail": {"GET": "signed in", "PATCH": "triage"},
    "api:pattern-draft": READ,
    "api:pattern-trial": {"POST": "rules"},
    "api:pattern-reanalyse": {"POST": "triage"},
    "api:diagnosis-list": READ,
    "api:diagnosis-detail": READ,
    "api:evidence-list": READ,
    "api:evidence-detail": READ,
    "api:evidence-excerpt": READ,
    "api:event-list": READ,
    "api:event-detail": READ,
    "api:review-list": {"GET": "signed in", "POST": "triage"},
    "api:review-detail": READ,
    "api:review-withdraw": {"POST": "triage"},
    "api:ruleset-list": READ,
    "api:ruleset-detail": READ,
    "api:revision-list": {"GET": "signed in", "POST": "rules"},
    "api:revision-detail": READ,
    "api:revision-activate": {"POST": "rules"},
    "api:revision-backtest": {"POST": "rules"},
    "api:notification-rule-list": {"GET": "signed in", "POST": "admin"},
    "api:notification-rule-detail": {"GET": "signed in", "PUT": "admin", "PATCH": "admin", "DELETE": "admin"},
    "api:delivery-list": READ,
    "api:delivery-detail": READ,
    "api:node-list": READ,
    "api:node-detail": READ,
    "api:drain-list": READ,
    "api:drain-detail": READ,
    "api:activation-list": READ,
    "api:activation-detail": READ,
    "schema": READ,
    "api-docs": READ,
}

# The Django admin's pages: the admin role (staff) only, whatever the method (Django's admin views render
# their page for any method but POST); users, groups and tokens need a superuser, and revisions are made
# in the workbench, not added in the admin.
ADMIN_SITE = dict.fromkeys(("GET", "POST", "PUT", "PATCH", "DELETE"), "admin")
# Sign-in failures and locks (django-axes) are the superusers' to see and lift, as the users themselves are (the
# apps' index pages, /admin/auth/ and /admin/axes/, answer 404 to a staff member without their models' permissions).
ADMIN_SITE_SUPERUSER = ("/admin/auth/group/", "/admin/auth/user/", "/admin/authtoken/tokenproxy/",
                        "/admin/rules/rulesetrevision/add/", "/admin/axes/access")  # fmt: skip
# Models the admin only shows (reviews are made and withdrawn through the review service; diagnoses, their evidence
# and node events are the engine's, corrected by reviews): their add and delete pages are denied to everyone, and
# their change page takes no POST.
ADMIN_SITE_VIEW_ONLY = ("/admin/diagnoses/review/", "/admin/diagnoses/diagnosis/", "/admin/diagnoses/evidence/",
                        "/admin/diagnoses/nodeevent/")  # fmt: skip
