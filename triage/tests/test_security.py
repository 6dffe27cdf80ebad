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
