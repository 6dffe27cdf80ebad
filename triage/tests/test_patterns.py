"""Issue 24's scenario, through the pages and through the API: 30 attempts on 3 clusters fail with a wording no rule
knows, among 60 others. The patterns list that template first with 30 attempts; a rule drafted from it, tried on
the pattern's attempts and backtested over history changes exactly those 30 and no other; activated and
reanalysed, they are attributed and the pattern is gone. Assigning a pattern and marking it known."""

import pytest

from access.roles import RULE_EDITOR, TRIAGER
from diagnoses.models import Attempt, Template
from rules.models import RuleSetRevision
from rules.services import active_revision
from triage.tests.patterns_scenario import CLUSTERS, DOMAIN, SUBDOMAIN, classified, scenario_bundles
from workbench.models import BatchRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario(write_bundle, store, tmp_path):
    """The 90 attempts, analysed; their ids by kind."""
    return {
        kind: [store(path).pk for path in paths] for kind, paths in scenario_bundles(write_bundle, tmp_path).items()
    }


def verdicts(ids) -> set[tuple]:
    attempts = Attempt.objects.filter(pk__in=ids).select_related("current_diagnosis")
    return {(a.current_diagnosis.outcome, a.current_diagnosis.domain, a.current_diagnosis.subdomain) for a in attempts}


def test_the_unknown_wording_becomes_a_rule_through_the_pages(scenario, client_for, django_capture_on_commit_callbacks):
    unknown, others = set(scenario["unknown"]), set(scenario["xid"] + scenario["other"])
    assert verdicts(unknown) == {("unattributed", "", "")}
    editor, triager = client_for(RULE_EDITOR, "editor"), client_for(TRIAGER, "triager")

    listed = triager.get("/patterns/")
    pattern, _parts, clusters = listed.context["patterns"][0]
    assert (pattern.attempts, sorted(clusters)) == (30, sorted(CLUSTERS))
    assert "credit loop failure on lane" in pattern.text
    assert b"credit loop failure on lane" in listed.content
    assert [row[0].attempts for row in listed.context["patterns"][1:]] == [1] * 15  # each other wording alone

    page = triager.get(f"/attempts/{scenario['unknown'][0]}/")
    assert b"Leads: lines no rule knows yet" in page.content
    lead = page.context["lead_set"].lead_list[0]
    assert (lead.position, lead.template_id, lead.lead_set.requested) == (1, pattern.pk, False)
    context = triager.get(f"/attempts/{scenario['unknown'][0]}/leads/{lead.pk}/context")
    assert b"credit loop failure" in context.content
    assert b'class="hit"' in context.content

    detail = triager.get(f"/patterns/{pattern.key}/")
    assert {lead.lead_set.attempt_id for lead in detail.context["examples"]} <= unknown
    assert len(detail.context["examples"]) == 20

    # Draft a rule: the domain and subdomain are left to choose, and the draft is refused until they are.
    drafted = editor.get(f"/rules/patterns/{pattern.key}/draft")
    text = drafted.context["text"]
    assert "streams: [system]" in text
    assert drafted.context["errors"]  # no domain yet
    refused = editor.post(f"/rules/patterns/{pattern.key}/draft", {"text": text, "message": "m"})
    assert refused.status_code == 400
    saved = editor.post(f"/rules/patterns/{pattern.key}/draft", {"text": classified(text), "message": "switch wedge"})
    revision = RuleSetRevision.objects.get(number=2)
    assert saved["Location"] == f"/rules/sets/default/r2/patterns/{pattern.key}/"
    assert (revision.active, revision.parent, revision.author.username) == (False, active_revision(), "editor")

    # Tried on the pattern's attempts: every one changes, to the new rule.
    trial = editor.get(saved["Location"])
    assert (trial.context["changed"], len(trial.context["rows"])) == (30, 30)
    assert {row["attempt"].pk for row in trial.context["rows"]} == unknown
    assert {row["after"]["rule"] for row in trial.context["rows"]} == {f"site.pattern.{pattern.key}"}

    # The backtest over history: exactly those 30 change.
    with django_capture_on_commit_callbacks(execute=True):
        editor.post("/rules/sets/default/r2/backtest", {})
    run = BatchRun.objects.get(kind="backtest")
    assert (run.state, run.result["examined"], run.result["changed"]) == ("done", 90, 30)
    assert {change["attempt"] for change in run.result["changes"]} == unknown

    # Activated and the pattern's attempts reanalysed: attributed, the others as they were, the pattern gone.
    editor.post("/rules/sets/default/r2/activate", {"message": "the switch wedge is a cause"})
    with django_capture_on_commit_callbacks(execute=True):
        editor.post(f"/rules/patterns/{pattern.key}/reanalyse")
    assert verdicts(unknown) == {("attributed", DOMAIN, SUBDOMAIN)}
    assert Attempt.objects.filter(pk__in=unknown, current_diagnosis__revision=revision).count() == 30
    assert verdicts(scenario["xid"]) == {("attributed", "hardware", "gpu.bus")}
    assert verdicts(scenario["other"]) == {("unattributed", "", "")}
    pattern.refresh_from_db()
    assert pattern.attempts == 0
    assert [row[0].pk for row in triager.get("/patterns/").context["patterns"]].count(pattern.pk) == 0
    assert not others & set(Attempt.objects.filter(current_diagnosis__revision=revision).values_list("pk", flat=True))


def test_a_pattern_is_assigned_and_marked_known(scenario, client_for):
    triager, viewer = client_for(TRIAGER, "triager"), client_for(None, "someone")
    other = Template.objects.filter(attempts=1).order_by("pk").first()
    assert viewer.post(f"/patterns/{other.key}/", {"status": "known"}).status_code == 403
    triager.post(f"/patterns/{other.key}/", {"assignee": "triager"})
    triager.post(f"/patterns/{other.key}/", {"status": "known"})
    other.refresh_from_db()
    assert (other.assignee.username, other.status, other.changed_by.username) == ("triager", "known", "triager")
    listed = [row[0].pk for row in triager.get("/patterns/").context["patterns"]]
    assert other.pk not in listed
    assert other.pk in [row[0].pk for row in triager.get("/patterns/?status=known").context["patterns"]]
    assert triager.post(f"/patterns/{other.key}/", {"assignee": "nobody"}).status_code == 302
    other.refresh_from_db()
    assert other.assignee.username == "triager"  # an unknown person changes nothing


def test_the_unknown_wording_becomes_a_rule_through_the_api(
    scenario, api_client_for, django_capture_on_commit_callbacks
):
    unknown = set(scenario["unknown"])
    editor, triager = api_client_for(RULE_EDITOR, "editor"), api_client_for(TRIAGER, "triager")

    first = editor.get("/api/v1/patterns").json()["results"][0]
    assert (first["attempts"], sorted(first["clusters"]), first["status"]) == (30, sorted(CLUSTERS), "new")
    key = first["id"]
    leads = triager.get(f"/api/v1/attempts/{scenario['unknown'][0]}/leads").json()
    assert leads["leads"][0]["template_id"] == key
    assert {"text", "node", "stream", "file", "line", "score", "why", "time", "template"} <= set(leads["leads"][0])
    assert triager.get(f"/api/v1/attempts/{scenario['xid'][0]}/leads").status_code == 404  # the rules settled it
    asked = triager.post(f"/api/v1/attempts/{scenario['xid'][0]}/leads")
    assert (asked.status_code, asked.json()["requested"]) == (200, True)

    drafted = editor.get(f"/api/v1/patterns/{key}/draft").json()
    assert set(drafted["attempts"]) == unknown
    base = editor.get("/api/v1/rulesets/default").json()["active_revision"]
    text = editor.get(f"/api/v1/revisions/{base}").json()["text"]
    refused = editor.post("/api/v1/revisions", {"ruleset": "default", "text": f"{text}---\n{drafted['rule']}"},
                          format="json")  # fmt: skip
    assert refused.status_code == 400
    created = editor.post(
        "/api/v1/revisions",
        {"ruleset": "default", "text": f"{text}---\n{classified(drafted['rule'])}", "message": "wedge", "parent": base},
        format="json",
    )
    assert created.status_code == 201, created.json()
    revision = created.json()["id"]

    trial = editor.post(f"/api/v1/patterns/{key}/trial", {"revision": revision}, format="json").json()
    assert (trial["tried"], trial["changed"]) == (30, 30)
    backtest = editor.post(f"/api/v1/revisions/{revision}/backtest", {}, format="json").json()
    assert (backtest["tried"], backtest["changed"]) == (90, 30)
    assert {row["attempt"] for row in backtest["attempts"] if row["changes"]} == unknown
    assert {row["after"]["subdomain"] for row in backtest["attempts"] if row["changes"]} == {SUBDOMAIN}

    assert editor.post(f"/api/v1/revisions/{revision}/activate", {"message": "wedge"}, format="json").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        queued = triager.post(f"/api/v1/patterns/{key}/reanalyse")
    assert (queued.status_code, queued.json()["queued"]) == (202, 30)
    assert verdicts(unknown) == {("attributed", DOMAIN, SUBDOMAIN)}
    assert verdicts(scenario["other"]) == {("unattributed", "", "")}
    assert key not in [row["id"] for row in editor.get("/api/v1/patterns").json()["results"]]
    assert triager.get(f"/api/v1/attempts/{scenario['unknown'][0]}/leads").status_code == 404

    other = editor.get("/api/v1/patterns").json()["results"][0]["id"]
    changed = triager.patch(f"/api/v1/patterns/{other}", {"assignee": "triager", "status": "known"}, format="json")
    assert (changed.status_code, changed.json()["assignee"], changed.json()["status"]) == (200, "triager", "known")
    assert editor.patch(f"/api/v1/patterns/{other}", {"status": "known"}, format="json").status_code == 403
    assert triager.patch(f"/api/v1/patterns/{other}", {"status": "gone"}, format="json").status_code == 400
