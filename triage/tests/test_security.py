"""Production settings: with DJANGO_DEBUG=0, ``manage.py check --deploy`` warns only about what
docs/operations.md explains (HSTS and the redirect to HTTPS, which the TLS proxy usually sends) and
nothing once they are set; cookies are Secure and HttpOnly; every page carries the Content-Security-Policy
and keeps it: no inline script, event handler or style attribute in any page."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from triage.tests.test_reads_only import named_urls, stored  # noqa: F401 - the fixture

BASE_DIR = Path(__file__).resolve().parents[2]
INLINE = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+\s*=|\sstyle\s*=", re.I)


def check_deploy(**environment) -> set[str]:
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "x" * 60 + "-deploy-check-key-0123456789"}
    env.pop("DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "CRITICAL"],
        cwd=BASE_DIR, env={**env, **environment}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return set(re.findall(r"\(security\.W\d+\)", result.stdout + result.stderr))


def test_check_deploy_warns_only_about_what_the_proxy_usually_does():
    assert check_deploy() == {"(security.W004)", "(security.W008)"}
    configured = check_deploy(
        DJANGO_SECURE_HSTS_SECONDS="31536000",
        DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS="1",
        DJANGO_SECURE_HSTS_PRELOAD="1",
        DJANGO_SECURE_SSL_REDIRECT="1",
        DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO=https",
    )
    assert configured == set()


@pytest.mark.django_db
def test_every_page_carries_the_policy_and_keeps_it(stored, admin_client, settings):  # noqa: F811 - the fixture
    assert settings.SESSION_COOKIE_SECURE is settings.CSRF_COOKIE_SECURE is not settings.DEBUG
    assert settings.SESSION_COOKIE_HTTPONLY is settings.CSRF_COOKIE_HTTPONLY is True
    pages = 0
    for _, url in named_urls(stored):
        response = admin_client.get(url)
        assert "script-src 'self'" in response["Content-Security-Policy"], url
        if response.get("Content-Type", "").startswith("text/html") and not response.streaming:
            pages += 1
            assert INLINE.findall(response.content) == [], url
    assert pages > 20


@pytest.mark.django_db
def test_sign_in_is_throttled_and_admins_see_and_lift_the_lock(person, admin_client, settings):
    """Finding 7: wrong passwords for one user from one address lock that pair out (django-axes); the right password
    then fails too, until an admin, who sees the lock in the admin, lifts it."""
    from django.test import Client

    user = person("admin", "locked-admin")
    browser = Client(REMOTE_ADDR="192.0.2.7")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert browser.post("/accounts/login/", {"username": user.username, "password": "wrong"}).status_code == 200
    locked = browser.post("/accounts/login/", {"username": user.username, "password": "wrong"})
    assert locked.status_code == 429
    assert b"Too many failed sign-ins" in locked.content
    right = browser.post("/accounts/login/", {"username": user.username, "password": person.password})
    assert right.status_code == 429  # locked, whatever the password
    assert (
        Client(REMOTE_ADDR="192.0.2.8")
        .post("/accounts/login/", {"username": user.username, "password": person.password})
        .status_code
        == 302
    )  # another address is not locked out

    admin = admin_client  # the Django admin's staff
    listed = admin.get("/admin/axes/accessattempt/")
    assert listed.status_code == 200
    assert user.username in listed.content.decode()
    assert "192.0.2.7" in listed.content.decode()
    from axes.models import AccessAttempt

    attempt = AccessAttempt.objects.get(username=user.username)
    lifted = admin.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert lifted.status_code == 302
    right = browser.post("/accounts/login/", {"username": user.username, "password": person.password})
    assert right.status_code == 302
