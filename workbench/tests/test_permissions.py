"""Viewers and triagers read the workbench; only rule editors change rules (the API: api/tests/test_rulesets.py)."""

import pytest
from django.urls import reverse

from access.roles import RULE_EDITOR, TRIAGER, VIEWER
from rules import services
from rules.models import Activation, RuleSetRevision
from rules.outline import file_of_line, outline, rule_find, rule_replace
from workbench.models import BatchRun, RegressionCase
from workbench.tests.workbench import THERMAL_RULE

pytestmark = pytest.mark.django_db


@pytest.fixture
def first():
    return services.active_revision()


WRITES = [
    ("workbench:editor", {"name": "default"}, {"text": "x"}),
    ("workbench:editor-check", {"name": "default"}, {"text": "x"}),
    ("workbench:activate", {"name": "default", "number": 1}, {"message": "x"}),
    ("workbench:backtest", {"name": "default", "number": 1}, {}),
    ("workbench:reanalyse", {}, {}),
    ("workbench:case-promote", {}, {"attempt": "1"}),
    ("workbench:run-cancel", {"pk": 1}, {}),
]


@pytest.mark.parametrize("role", [VIEWER, TRIAGER])
@pytest.mark.parametrize(("name", "kwargs", "data"), WRITES)
def test_viewers_and_triagers_get_403_on_every_page_write(client, role, name, kwargs, data, first, person):
    client.force_login(person(role))
    if name == "workbench:run-cancel":
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

    for url in (reverse("workbench:ruleset", args=["default"]), reverse("workbench:revision", args=["default", 1])):
        page = client.get(url).content.decode()
        assert "Edit a new draft" not in page
        assert 'id="activate-form"' not in page
    assert client.get(reverse("workbench:editor", args=["default"])).status_code == 403


def test_every_page_needs_a_login(client, first):
    for url in (
        reverse("workbench:rulesets"),
        reverse("workbench:revision", args=["default", 1]),
        reverse("workbench:cases"),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]


def test_the_progress_is_polled_until_the_run_finishes(client, first, person):
    client.force_login(person(RULE_EDITOR))
    run = BatchRun.objects.create(kind="backtest", revision=first, limit=10, time_limit=60, state="running", total=4)
    BatchRun.objects.filter(pk=run.pk).update(done=1)
    url = reverse("workbench:run", args=[run.pk])

    htmx = {"HX-Request": "true", "HX-Target": "run-progress"}  # the polling element is its own target
    polling = client.get(url, headers=htmx)
    assert polling.status_code == 200
    assert 'hx-trigger="every 1s"' in polling.content.decode()
    assert 'value="25"' in polling.content.decode()
    assert polling["Vary"] == "HX-Request, Cookie"

    BatchRun.objects.filter(pk=run.pk).update(state="done", done=4, result={"examined": 4, "changed": 0})
    finished = client.get(url, headers=htmx)
    assert finished.status_code == 286  # htmx swaps the final state in and stops polling
    assert "hx-trigger" not in finished.content.decode()
    assert "0 of 4 diagnoses would change" in finished.content.decode()


def test_the_editor_check_marks_each_error_at_its_line(client, first, person):
    client.force_login(person(RULE_EDITOR))
    text = first.text + THERMAL_RULE.replace("(?P<gpu>", "(?P<gpu")
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "(?P<gpu\\d" in t)

    response = client.post(
        reverse("workbench:editor-check", args=["default"]),
        {"text": text},
        headers={"HX-Request": "true", "HX-Target": "editor-errors"},
    )

    page = response.content.decode()
    assert f'data-line="{line}" data-here data-reason="pattern: not a valid RE2 pattern' in page
    document = file_of_line(outline(text, rules=False), line).name  # the pasted rule's document, after the pack's
    assert f'line {line}</a> of <span class="mono">{document}</span>, rule <code>site.gpu.thermal</code>' in page


def test_the_pages_store_nothing_before_the_pack_is_stored(client_for):
    client = client_for(VIEWER)

    for url in ("/rules/", "/rules/cases/", "/rules/reanalyse/"):
        assert client.get(url).status_code == 200, url

    assert not RuleSetRevision.objects.exists()  # the default pack becomes revision 1 on its first use, not a read


def test_one_rule_is_saved_into_the_whole_text_or_refused_naming_file_line_and_field(client, first, person):
    client.force_login(person(RULE_EDITOR))
    rule = rule_find(outline(first.text), "gpu.xid.nvlink")
    url = reverse("workbench:editor", args=["default"])
    broken = rule.text.replace("role: cause", "role: sometimes")
    line = rule.first + broken.split("\n").index("    role: sometimes")

    refused = client.post(url, {"parent": 1, "rule": rule.id, "text": broken, "message": "x"})

    assert refused.status_code == 400
    named = f'line {line}</a> of <span class="mono">default/gpu-xid.yaml</span>, rule <code>gpu.xid.nvlink</code>'
    assert f"{named}, field <code>role</code>" in refused.content.decode()
    assert RuleSetRevision.objects.count() == 1

    changed = rule.text.replace("precedence: 90", "precedence: 91")
    saved = client.post(url, {"parent": 1, "rule": rule.id, "text": changed, "message": "NVLink first"})

    draft = RuleSetRevision.objects.get(number=2)
    assert saved["Location"] == f"/rules/sets/default/r2/#L{rule.first}"
    assert draft.text == rule_replace(first.text, rule, changed)
    assert (draft.parent, draft.active) == (first, False)
    assert client.get(url, {"from": 1, "rule": "no.such.rule"}).status_code == 404
    missing = client.post(url, {"parent": 1, "rule": "no.such.rule", "text": "x"})
    assert missing.status_code == 404
    assert RuleSetRevision.objects.count() == 2


def test_the_outline_search_finds_rules_by_their_text(client, first, person):
    client.force_login(person(RULE_EDITOR))

    response = client.get(
        reverse("workbench:editor", args=["default"]),
        {"q": "NVLINK"},
        headers={"HX-Request": "true", "HX-Target": "editor-outline"},
    )

    page = response.content.decode()
    assert page.lstrip().startswith('<nav id="editor-outline"')
    found = [r.id for f in outline(first.text) for r in f.rules if "nvlink" in r.text.casefold()]
    assert page.count("<code>") == len(found) > 3
    assert all(f"<code>{rule_id}</code>" in page for rule_id in found)
