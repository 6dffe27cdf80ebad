"""Notification rules in the API: admins configure them (the webhook URL only by reference), everyone signed in reads
them and the delivery log; triagers and viewers cannot change them."""

import pytest

from access.roles import ADMIN, RULE_EDITOR, TRIAGER, VIEWER
from handoffs.models import Delivery, Incident, NotificationRule

pytestmark = pytest.mark.django_db
RULE = {"name": "gpu faults", "trigger": "diagnosis", "domains": ["hardware"], "subdomains": ["gpu.bus", "gpu.memory"],
        "channel": "slack", "url_env": "FAULTLINE_TEST_SLACK_URL", "group_by": "root_cause", "group_seconds": 120,
        "quiet_seconds": 1800}  # fmt: skip


@pytest.fixture(autouse=True)
def slack_url(monkeypatch):
    monkeypatch.setenv("FAULTLINE_TEST_SLACK_URL", "https://hooks.slack.example/services/T0/B0/secret")


def test_admins_configure_rules_and_everyone_signed_in_reads_them_and_the_log(api_client_for):
    admin = api_client_for(ADMIN)
    created = admin.post("/api/v1/notification-rules", RULE, format="json")
    assert created.status_code == 201, created.content
    document = created.json()
    assert {key: document[key] for key in RULE} == RULE
    assert "secret" not in created.content.decode()

    changed = admin.patch(f"/api/v1/notification-rules/{document['id']}", {"enabled": False}, format="json")
    assert changed.status_code == 200
    assert NotificationRule.objects.get().enabled is False

    incident = Incident.objects.create(rule=NotificationRule.objects.get(), key="dgx-a/hardware/gpu.bus",
                                       due=NotificationRule.objects.get().created, events=3)  # fmt: skip
    Delivery.objects.create(incident=incident, number=1, ok=True, answer="HTTP 200 ok")
    viewer = api_client_for(VIEWER)
    assert viewer.get("/api/v1/notification-rules").json()["results"][0]["name"] == "gpu faults"
    log = viewer.get("/api/v1/deliveries").json()["results"]
    assert log[0]["rule"] == "gpu faults"
    assert log[0]["events"] == 3
    assert log[0]["ok"] is True

    assert admin.delete(f"/api/v1/notification-rules/{document['id']}").status_code == 204
    assert not NotificationRule.objects.exists()


@pytest.mark.parametrize("role", [VIEWER, TRIAGER, RULE_EDITOR])
def test_only_admins_change_rules(api_client_for, role):
    rule = NotificationRule.objects.create(name="existing", url_env="FAULTLINE_TEST_SLACK_URL")
    client = api_client_for(role)
    assert client.post("/api/v1/notification-rules", RULE, format="json").status_code == 403
    assert client.patch(f"/api/v1/notification-rules/{rule.pk}", {"enabled": False}, format="json").status_code == 403
    assert client.delete(f"/api/v1/notification-rules/{rule.pk}").status_code == 403
    assert NotificationRule.objects.get().enabled is True


def test_a_rule_is_refused_with_the_field_named(api_client_for):
    admin = api_client_for(ADMIN)
    unset = admin.post("/api/v1/notification-rules", {**RULE, "url_env": "FAULTLINE_TEST_UNSET"}, format="json")
    assert unset.status_code == 400
    assert unset.json()["error"]["field"] == "url_env"
    assert "not set" in unset.json()["error"]["message"]
    mail = admin.post("/api/v1/notification-rules", {**RULE, "channel": "email", "url_env": ""}, format="json")
    assert mail.status_code == 400
    assert mail.json()["error"]["field"] == "recipients"
    assert api_client_for(None).get("/api/v1/notification-rules").status_code == 200
    assert admin.__class__().get("/api/v1/notification-rules").status_code in (401, 403)
