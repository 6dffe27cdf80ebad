"""Viewers and triagers read the workbench; only rule editors change rules, in the pages and the API."""

import pytest
from django.urls import reverse

from access.roles import RULE_EDITOR, TRIAGER, VIEWER
from rules import services
from rules.models import Activation, BatchRun, RegressionCase, RuleSetRevision
from rules.tests.workbench import THERMAL_RULE

pytestmark = pytest.mark.django_db


@pytest.fixture
def first():
    return services.active_revision()


@pytest.mark.parametrize("role", [VIEWER, TRIAGER])
def test_viewers_and_triagers_read_but_cannot_write_through_the_api(role, first, api_client_for):
    client = api_client_for(role)

    assert client.get("/api/v1/rulesets").status_code == 200
    assert client.get(f"/api/v1/revisions/{first.pk}").json()["text"] == first.text
    created = client.post("/api/v1/revisions", {"ruleset": "default", "text": first.text + THERMAL_RULE}, format="json")
    activated = client.post(f"/api/v1/revisions/{first.pk}/activate", {"message": "x"}, format="json")

    assert (created.status_code, activated.status_code) == (403, 403)
    assert created.json()["error"]["code"] == "permission_denied"
    assert RuleSetRevision.objects.count() == 1
    assert Activation.objects.count() == 1


def test_a_rule_editor_creates_and_activates_a_revision_through_the_api(first, api_client_for):
    client = api_client_for(RULE_EDITOR)

    created = client.post(
        "/api/v1/revisions",
        {"ruleset": "default", "text": first.text + THERMAL_RULE, "message": "thermal", "parent": first.pk},
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
    text = first.text + THERMAL_RULE.replace("domain: hardware", "domain: hardwre")
    line = text.splitlines().index("    domain: hardwre") + 1

    response = client.post("/api/v1/revisions", {"ruleset": "default", "text": text}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "text"
    assert error["message"].startswith(f"default.yaml:{line}: rule 'site.gpu.thermal', field 'domain': unknown domain")
    assert RuleSetRevision.objects.count() == 1


WRITES = [
    ("rules:editor", {"name": "default"}, {"text": "x"}),
    ("rules:editor-check", {"name": "default"}, {"text": "x"}),
    ("rules:activate", {"name": "default", "number": 1}, {"message": "x"}),
    ("rules:backtest", {"name": "default", "number": 1}, {}),
    ("rules:reanalyse", {}, {}),
    ("rules:case-promote", {}, {"attempt": "1"}),
    ("rules:run-cancel", {"pk": 1}, {}),
]


@pytest.mark.parametrize("role", [VIEWER, TRIAGER])
@pytest.mark.parametrize(("name", "kwargs", "data"), WRITES)
def test_viewers_and_triagers_get_403_on_every_page_write(client, role, name, kwargs, data, first, person):
    client.force_login(person(role))
    if name == "rules:run-cancel":
        kwargs = {"pk": BatchRun.objects.create(kind="backtest", revision=first, limit=1, time_limit=1).pk}

    response = client.post(reverse(name, kwargs=kwargs), data)

    assert response.status_code == 403
    assert RuleSetRevision.objects.count() == 1
    assert Activation.objects.count() == 1
    assert not RegressionCase.objects.exists()
    assert not BatchRun.objects.exclude(state="queued").exists()


@pytest.mark.parametrize("role", [VIEWER, TRIAGER])
def test_read_only_pages_offer_no_writes(client, role, first, person):
    client.force_login(person(role))

    for url in (reverse("rules:ruleset", args=["default"]), reverse("rules:revision", args=["default", 1])):
        page = client.get(url).content.decode()
        assert "Edit a new draft" not in page
        assert 'id="activate-form"' not in page
    assert client.get(reverse("rules:editor", args=["default"])).status_code == 403


def test_every_page_needs_a_login(client, first):
    for url in (reverse("rules:rulesets"), reverse("rules:revision", args=["default", 1]), reverse("rules:cases")):
        response = client.get(url)
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]


def test_the_progress_is_polled_until_the_run_finishes(client, first, person):
    client.force_login(person(RULE_EDITOR))
    run = BatchRun.objects.create(kind="backtest", revision=first, limit=10, time_limit=60, state="running", total=4)
    BatchRun.objects.filter(pk=run.pk).update(done=1)
    url = reverse("rules:run", args=[run.pk])

    polling = client.get(url, headers={"HX-Request": "true"})
    assert polling.status_code == 200
    assert 'hx-trigger="every 1s"' in polling.content.decode()
    assert 'value="25"' in polling.content.decode()
    assert polling["Vary"] == "HX-Request, Cookie"

    BatchRun.objects.filter(pk=run.pk).update(state="done", done=4, result={"examined": 4, "changed": 0})
    finished = client.get(url, headers={"HX-Request": "true"})
    assert finished.status_code == 286  # htmx swaps the final state in and stops polling
    assert "hx-trigger" not in finished.content.decode()
    assert "0 of 4 diagnoses would change" in finished.content.decode()


def test_the_editor_check_marks_each_error_at_its_line(client, first, person):
    client.force_login(person(RULE_EDITOR))
    text = first.text + THERMAL_RULE.replace("(?P<gpu>", "(?P<gpu")
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "(?P<gpu\\d" in t)

    response = client.post(
        reverse("rules:editor-check", args=["default"]), {"text": text}, headers={"HX-Request": "true"}
    )

    page = response.content.decode()
    assert f'<span id="gutter-{line}" class="bad" title="pattern: not a valid RE2 pattern' in page
    assert 'hx-swap-oob="true"' in page
    assert f"line {line}</a>, rule <code>site.gpu.thermal</code>" in page
