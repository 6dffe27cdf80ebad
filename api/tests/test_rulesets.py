"""Rule sets, revisions and activations in the API: everyone signed in reads, only rule editors write."""

import pytest

from access.roles import RULE_EDITOR, TRIAGER, VIEWER
from rules import services
from rules.models import Activation, RuleSetRevision

pytestmark = pytest.mark.django_db
SECOND_RULE = """
---
rules:
  - id: site.disk.full
    description: the node's local disk filled up
    streams: [system]
    pattern: 'No space left on device'
    role: cause
    domain: storage
    subdomain: capacity
    summary: the local disk of {node} is full
"""


@pytest.fixture
def first():
    return services.active_revision()


@pytest.mark.parametrize("role", [VIEWER, TRIAGER])
def test_viewers_and_triagers_read_but_cannot_write_through_the_api(role, first, api_client_for):
    client = api_client_for(role)

    assert client.get("/api/v1/rulesets").status_code == 200
    assert client.get(f"/api/v1/revisions/{first.pk}").json()["text"] == first.text
    created = client.post("/api/v1/revisions", {"ruleset": "default", "text": first.text + SECOND_RULE}, format="json")
    activated = client.post(f"/api/v1/revisions/{first.pk}/activate", {"message": "x"}, format="json")

    assert (created.status_code, activated.status_code) == (403, 403)
    assert created.json()["error"]["code"] == "permission_denied"
    assert RuleSetRevision.objects.count() == 1
    assert Activation.objects.count() == 1


def test_a_rule_editor_creates_and_activates_a_revision_through_the_api(first, api_client_for):
    client = api_client_for(RULE_EDITOR)

    created = client.post(
        "/api/v1/revisions",
        {"ruleset": "default", "text": first.text + SECOND_RULE, "message": "thermal", "parent": first.pk},
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["number"], body["active"], body["author"], body["parent"]) == (
        2,
        False,
        "person-rule-editor",
        first.pk,
    )

    activated = client.post(f"/api/v1/revisions/{body['id']}/activate", {"message": "thermal rule"}, format="json")
    assert activated.status_code == 200
    assert (activated.json()["revision"], activated.json()["previous"]) == (body["id"], first.pk)
    assert client.get("/api/v1/rulesets/default").json()["active_revision"] == body["id"]
    log = client.get("/api/v1/activations?ruleset__name=default").json()["results"]
    assert [(a["revision"], a["user"]) for a in log] == [(body["id"], "person-rule-editor"), (first.pk, None)]
    again = client.post(f"/api/v1/revisions/{body['id']}/activate", {}, format="json")
    assert again.status_code == 400
    assert "already the active revision" in again.json()["error"]["message"]


def test_invalid_rules_are_a_400_naming_the_line(first, api_client_for):
    client = api_client_for(RULE_EDITOR)
    text = first.text + SECOND_RULE.replace("domain: storage", "domain: storgae")
    line = text.splitlines().index("    domain: storgae") + 1

    response = client.post("/api/v1/revisions", {"ruleset": "default", "text": text}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "text"
    assert error["message"].startswith(f"default.yaml:{line}: rule 'site.disk.full', field 'domain': unknown domain")
    assert RuleSetRevision.objects.count() == 1
