"""The production check (``make prod-check``, in .ci/run): gunicorn, a Celery worker and Celery beat as three
processes of their own against PostgreSQL, Redis and an S3-compatible object store (a real S3-protocol server,
moto's), with DJANGO_DEBUG=0, as docker-compose.yml runs them. A bundle uploaded through gunicorn (once with
``Transfer-Encoding: chunked``) is stored in the object store and analysed by the worker from its cache, its page is
served, static files are served (WhiteNoise, after collectstatic), no answer names the server's software, and beat
sends its tasks.

Runs when ``FAULTLINE_PROD_CHECK=1`` (``make prod-check`` sets it); gunicorn listens on
``FAULTLINE_TEST_WEB_PORT`` + 1 (default 18602), the broker is ``FAULTLINE_TEST_BROKER_URL`` (flushed).
"""

import http.client as http_client
import os
import subprocess
import sys

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from access.roles import TRIAGER, VIEWER
from diagnoses.models import Attempt
from diagnoses.tests.workers import (
    BASE_DIR,
    database_url,
    http,
    kill,
    port_free,
    start_beat,
    start_web,
    start_worker,
    upload,
    wait_for,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(os.environ.get("FAULTLINE_PROD_CHECK") != "1", reason="make prod-check runs it"),
]
BROKER = os.environ.get("FAULTLINE_TEST_BROKER_URL", "redis://127.0.0.1:6379/3")
PORT = int(os.environ.get("FAULTLINE_TEST_WEB_PORT", "18601")) + 1


@pytest.fixture
def service(
    tmp_path, bundle_root, transactional_roles, object_store
):  # transactional_roles: the role groups of transactional tests
    if connection.vendor != "postgresql" or not port_free(PORT):
        pytest.fail(f"the production check needs PostgreSQL and port {PORT} free")
    redis.Redis.from_url(BROKER).flushdb()
    environment = {
        "PATH": os.environ["PATH"],
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,  # the session signed in here is valid there
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER,
        "FAULTLINE_VAR_DIR": str(tmp_path / "var"),
        "FAULTLINE_BUNDLE_ROOT": str(bundle_root),
        "FAULTLINE_REAPER_INTERVAL": "1",
        **object_store.environment,
    }
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=BASE_DIR, env=environment, check=True
    )
    processes = [
        start_web(PORT, environment, tmp_path, workers=2),
        start_worker("prod", environment, tmp_path, beat=False),
        start_beat(environment, tmp_path),
    ]
    yield f"http://127.0.0.1:{PORT}", tmp_path, object_store
    for process in processes:
        kill(process)


def chunked_upload(token: str, archive: bytes):
    """POST the bundle with ``Transfer-Encoding: chunked`` (no Content-Length), as a streaming client sends it."""
    connection = http_client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/gzip"}
    pieces = [archive[i : i + 4096] for i in range(0, len(archive), 4096)]
    connection.request("POST", "/api/v1/attempts", body=iter(pieces), headers=headers, encode_chunked=True)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def person(role: str) -> User:
    user = User.objects.create_user(f"prod-{role}")
    user.groups.add(Group.objects.get(name=role))
    return user


def test_gunicorn_a_worker_and_beat_serve_upload_analysis_pages_and_static_files(service, make_bundle, tar_gz):
    base, tmp_path, object_store = service
    token = Token.objects.create(user=person(TRIAGER)).key
    status, body = upload(base, token, tar_gz(make_bundle()))
    assert status == 202, body
    chunked = chunked_upload(token, tar_gz(make_bundle(job_id="chunked")))
    assert (chunked.status, chunked.getheader("Server")) == (202, None)
    assert any(key.endswith("/attempt.json") for key in object_store.stored())

    wait_for(lambda: Attempt.objects.filter(analysis_state="analysed").count() == 2, 60, "the analyses")
    attempt = Attempt.objects.select_related("current_diagnosis").get(pk=body["id"])
    assert attempt.current_diagnosis.subdomain == "gpu.bus"

    browser = Client()
    browser.force_login(person(VIEWER))
    cookie = {"Cookie": f"sessionid={browser.cookies['sessionid'].value}"}
    status, page = http("GET", f"{base}/attempts/{attempt.pk}/", headers=cookie)
    assert status == 200
    assert b"gpu.bus" in page
    status, css = http("GET", f"{base}/static/css/faultline.css")
    assert (status, b".htmx-indicator" in css) == (200, True)
    assert http("GET", f"{base}/nowhere/")[0] == 404
    wait_for(lambda: "reap-stuck-attempts" in (tmp_path / "beat.log").read_text(), 30, "beat to send the reaper")
