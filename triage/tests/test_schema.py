"""schemathesis against the project's own OpenAPI schema: generated requests (a few per operation),
authenticated as an admin; no server error, and every response matches the schema."""

import pytest
import schemathesis
from django.contrib.auth.models import Group, User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance

from access.roles import ADMIN
from diagnoses.services import attempts
from triage.wsgi import application


@pytest.fixture
def token(db, make_bundle, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        attempts.attempt_ingest_directory(path=make_bundle())
    user = User.objects.create_user("schemathesis")
    user.groups.add(Group.objects.get(name=ADMIN))
    return Token.objects.create(user=user).key


@pytest.fixture
def connection_kept():
    """Keep the test's database connection (and transaction) across WSGI requests, as Django's test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(token, connection_kept):
    return schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json",
        application,
        config=SchemathesisConfig.from_dict({"generation": {"allow-x00": False}}),  # NUL in text is refused: 400
        headers={"Authorization": f"Token {token}"},
    )


EXAMPLES = settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def test_the_api_keeps_to_its_schema(api_schema, token):
    headers = {"Authorization": f"Token {token}"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 15

    for operation in operations:
        check(operation, headers)


def check(operation, headers: dict) -> None:
    """Send generated requests to one operation and validate each response."""
    # A posted bundle or review can match the schema and still be refused (not a .tar.gz, no such
    # diagnosis): only what a GET accepts is wholly described by its schema.
    excluded = [] if operation.method.upper() == "GET" else [positive_data_acceptance]

    @EXAMPLES
    @given(case=operation.as_strategy())
    def examples(case):
        response = case.call(headers=headers)
        case.validate_response(response, headers=headers, excluded_checks=excluded)

    examples()
