"""The hand-offs' pages: the drain panel of the attempt and node pages, the drains page and the notifications page,
and who may do what there (triagers propose drains, admins approve, resume and configure)."""

import re

import pytest
from django.urls import reverse

from access.roles import ADMIN, RULE_EDITOR, TRIAGER, VIEWER
from diagnoses.models import Cluster
from handoffs.models import Drain, DrainPolicy, NotificationRule

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempt(make_bundle, store):
    """An attempt whose root cause is node02, on a cluster whose Slurm commands run through ``true`` (they succeed
    and change nothing)."""
    attempt = store(make_bundle(job_id="77"))
    Cluster.objects.filter(pk=attempt.cluster_id).update(
        connector="slurm", scheduler_settings={"command_prefix": ["true"]}
    )
    attempt.cluster.refresh_from_db()
    return attempt


def propose(client, attempt, reason="Xid 79: GPU fell off the bus"):
    node = attempt.current_diagnosis.root_cause_nodes.get()
    page = reverse("pages:attempt-detail", args=[attempt.pk])
    return client.post(reverse("pages:drain-propose"),
                       {"node": node.pk, "attempt": attempt.pk, "reason": reason, "next": page})  # fmt: skip


def test_a_triager_proposes_draining_the_root_cause_node_from_the_attempt_page(client_for, attempt):
    triager = client_for(TRIAGER, "tara")
    page = triager.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()
    assert "Propose draining node02" in page
    assert 'value="gpu.bus (job 77)"' in page  # the reason starts from the diagnosis

    answer = propose(triager, attempt)
    assert answer.status_code == 302
    assert answer["Location"] == reverse("pages:attempt-detail", args=[attempt.pk])
    drain = Drain.objects.get()
    assert (drain.node.name, drain.state, drain.proposed_by.username, drain.attempt) == (
        "node02",
        "proposed",
        "tara",
        attempt,
    )
    page = triager.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()
    assert "Propose draining node02" not in page  # one drain at a time
    assert "Approve and drain" not in page  # not a triager's to approve
    assert "tara" in page


@pytest.mark.parametrize("role", [None, VIEWER, RULE_EDITOR])
def test_only_triagers_and_admins_propose(client_for, attempt, role):
    client = client_for(role)
    assert "Propose draining" not in client.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()
    assert propose(client, attempt).status_code == 403
    assert not Drain.objects.exists()


def test_an_admin_approves_runs_and_resumes_from_the_node_page(client_for, attempt, django_capture_on_commit_callbacks):
    propose(client_for(TRIAGER), attempt)
    drain = Drain.objects.get()
    admin = client_for(ADMIN, "ada")
    node_page = reverse("pages:node-detail", args=["dgx-a", "node02"])
    assert "Approve and drain node02" in admin.get(node_page).content.decode()

    with django_capture_on_commit_callbacks(execute=True):  # the drain's task runs once the approval commits
        approved = admin.post(reverse("pages:drain-approve", args=[drain.pk]), {"next": node_page})
    assert approved["Location"] == node_page
    drain.refresh_from_db()
    assert (drain.state, drain.decided_by.username) == ("drained", "ada")
    page = admin.get(node_page).content.decode()
    assert "Resume node02" in page
    assert "ada" in page

    admin.post(reverse("pages:drain-resume", args=[drain.pk]))
    drain.refresh_from_db()
    assert (drain.state, drain.resumed_by.username) == ("resumed", "ada")
    listing = admin.get(reverse("pages:drain-list")).content.decode()
    assert re.search(r'id="drain-\d+"', listing)


@pytest.mark.parametrize("role", [VIEWER, TRIAGER, RULE_EDITOR])
def test_only_admins_approve_reject_resume_and_set_policies(client_for, attempt, role):
    propose(client_for(TRIAGER), attempt)
    drain = Drain.objects.get()
    client = client_for(role, f"{role}-2".replace(" ", "-"))
    assert client.post(reverse("pages:drain-approve", args=[drain.pk])).status_code == 403
    assert client.post(reverse("pages:drain-reject", args=[drain.pk])).status_code == 403
    Drain.objects.filter(pk=drain.pk).update(state="drained")
    assert client.post(reverse("pages:drain-resume", args=[drain.pk])).status_code == 403
    policy = reverse("pages:drain-policy", args=["dgx-a"])
    assert client.post(policy, {"run_automatically": "on", "max_drained": 50}).status_code == 403
    assert Drain.objects.get().state == "drained"
    assert not DrainPolicy.objects.exists()
    assert "Approve and drain" not in client.get(reverse("pages:drain-list")).content.decode()


def test_an_admin_sets_the_drain_policy_and_the_breaker_message_shows(client_for, attempt, make_bundle, store):
    admin = client_for(ADMIN)
    admin.post(reverse("pages:drain-policy", args=["dgx-a"]), {"max_drained": 1})
    assert DrainPolicy.objects.get().max_drained == 1
    propose(client_for(TRIAGER), attempt)
    admin.post(reverse("pages:drain-approve", args=[Drain.objects.get().pk]))
    other = store(make_bundle(job_id="78", faulty="node03"))
    propose(client_for(TRIAGER, "second"), other)
    waiting = Drain.objects.get(state="proposed")
    answer = admin.post(reverse("pages:drain-approve", args=[waiting.pk]), follow=True)
    assert "circuit breaker: 1 node(s) of dgx-a already drained" in answer.content.decode()
    assert Drain.objects.get(pk=waiting.pk).state == "proposed"


def test_admins_configure_notifications_on_the_page_and_others_read_it(client_for, monkeypatch):
    monkeypatch.setenv("FAULTLINE_TEST_HOOK", "https://hooks.example.org/T0/Zq7Kx9")
    admin = client_for(ADMIN)
    form = {"name": "gpu", "enabled": "on", "trigger": "diagnosis", "outcomes": "attributed", "domains": "",
            "subdomains": "gpu.bus, gpu.memory", "clusters": "", "backlog_threshold": 0, "channel": "webhook",
            "url_env": "FAULTLINE_TEST_HOOK", "url_file": "", "recipients": "", "group_by": "job",
            "group_seconds": 60, "quiet_seconds": 3600}  # fmt: skip
    saved = admin.post(reverse("pages:notification-rule-add"), form)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    rule = NotificationRule.objects.get()
    assert rule.subdomains == ["gpu.bus", "gpu.memory"]
    refused = admin.post(reverse("pages:notification-rule-add"), {**form, "name": "x", "url_env": "FAULTLINE_UNSET"})
    assert refused.status_code == 400
    assert "which is not set" in refused.content.decode()

    for role in (VIEWER, TRIAGER, RULE_EDITOR):
        client = client_for(role)
        page = client.get(reverse("pages:notification-list")).content.decode()
        assert "gpu" in page
        assert "URL in $FAULTLINE_TEST_HOOK" in page
        assert "Add rule" not in page
        assert "Zq7Kx9" not in page
        assert client.post(reverse("pages:notification-rule-add"), {**form, "name": "mine"}).status_code == 403
        assert client.post(reverse("pages:notification-rule-delete", args=[rule.pk])).status_code == 403
    assert NotificationRule.objects.count() == 1
