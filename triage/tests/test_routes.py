"""Every route answers only its methods, and only to the roles allowed: every URL pattern (the pages, the
workbench, the API with its format-suffix variants, the login pages, the schema and the Django admin's
pages) is requested with GET, POST, PUT, PATCH and DELETE by each principal (anonymous, viewer, triager,
rule editor, admin) and the outcome compared with ``route_table.py``.

An outcome is "ok" (answered: a page, a redirect that is not to a login, a 4xx about the request
itself), "denied" (401, 403 or a redirect to a login page) or 405. Writes are sent without a body (CSRF
checks are off, as for the API's token clients): a route that accepts the method answers about the
missing data, which is "ok". No answer may be a server error.
"""

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from access.roles import ADMIN, RULE_EDITOR, TRIAGER, VIEWER
from triage.tests.route_table import (
    ADMIN_SITE,
    ADMIN_SITE_SUPERUSER,
    ADMIN_SITE_VIEW_ONLY,
    NOT_BEHIND_THE_LOGIN,
    ROLES,
    ROUTES,
)
from triage.tests.test_reads_only import admin_urls, named_urls, stored  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
PRINCIPALS = ("anonymous", VIEWER, TRIAGER, RULE_EDITOR, ADMIN)


def outcome(response) -> str:
    if response.status_code >= 500:
        return f"error {response.status_code}"
    if response.status_code == 405:
        return "405"
    if response.status_code in (401, 403):
        return "denied"
    if response.status_code == 302 and "/login/?next=" in response["Location"]:  # not signing out's landing
        return "denied"
    return "ok"


def who(allowed) -> tuple[str, ...]:
    return ROLES.get(allowed, allowed)


def expected(route: str, method: str, principal: str) -> set[str]:
    """The outcomes the table allows. A method the route does not take is 405 for whoever may use one it
    takes; for anyone else it is 405 or denied (whichever the view checks first)."""
    if route.startswith("admin:"):
        path = route.removeprefix("admin:")
        writes = path.endswith(("/add/", "/delete/")) or (method == "POST" and path.endswith("/change/"))
        denied = path.startswith(ADMIN_SITE_SUPERUSER) or (path.startswith(ADMIN_SITE_VIEW_ONLY) and writes)
        allowed = () if denied else ADMIN_SITE[method]
        return {"ok"} if principal in who(allowed) else {"denied"}
    entry = ROUTES[route]
    if method in entry:
        return {"ok"} if principal in who(entry[method]) else {"denied"}
    if any(principal in who(allowed) for allowed in entry.values()):
        return {"405"}
    signed_in_only = route not in NOT_BEHIND_THE_LOGIN and any(who(allowed) for allowed in entry.values())
    return {"denied"} if principal == "anonymous" and signed_in_only else {"405", "denied"}


class Principal:
    """A test client signed in with one role (anonymous: none); ``request`` signs in again after a logout."""

    def __init__(self, role: str):
        self.client, self.user = Client(raise_request_exception=False), None
        if role != "anonymous":
            self.user = User.objects.create_user(f"route-{role.replace(' ', '-')}", is_staff=role == ADMIN)
            self.user.groups.add(Group.objects.get(name=role))
            self.client.force_login(self.user)

    def request(self, method: str, url: str):
        response = self.client.generic(method, url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
        if self.user is not None:
            self.client.force_login(self.user)
        return response


def principals() -> dict[str, Principal]:
    return {role: Principal(role) for role in PRINCIPALS}


def test_every_route_answers_only_its_methods_and_roles(stored):  # noqa: F811 - the fixture
    routes = named_urls(stored) + [(f"admin:{url}", url) for url in admin_urls(stored)]
    assert not {name for name, _ in routes if not name.startswith("admin:")} ^ set(ROUTES), "route_table.py"
    signed_in = principals()
    mismatches = []
    for route, url in routes:
        for method in METHODS:
            for principal in PRINCIPALS:
                got, want = outcome(signed_in[principal].request(method, url)), expected(route, method, principal)
                if got not in want:
                    mismatches.append(f"{method} {url} ({route}) as {principal}: {got}, expected {' or '.join(want)}")
    assert mismatches == []
