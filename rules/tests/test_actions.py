"""Every action the default pack recommends is explained (rules/actions.py), and the attempt page shows it."""

from django.conf import settings

from access.roles import VIEWER
from engine import load_rules
from rules.actions import ACTIONS, action_meaning


def test_every_action_of_the_default_pack_is_explained():
    used = {rule.action for rule in load_rules(settings.FAULTLINE_RULES_PATH).rules if rule.action}
    assert used
    assert used <= set(ACTIONS), sorted(used - set(ACTIONS))
    assert all(len(ACTIONS[action]) > 40 for action in used)
    assert action_meaning(None) == action_meaning("NO_SUCH_ACTION") == ""


def test_the_attempt_page_explains_its_recommended_action(make_bundle, store, client_for):
    attempt = store(make_bundle(job_id="3"))
    assert attempt.current_diagnosis.document["root_cause"]["action"] == "NODE_REBOOT"
    page = client_for(VIEWER).get(f"/attempts/{attempt.pk}/").content.decode()
    assert "<code>NODE_REBOOT</code>" in page
    assert "RESTART_BM (restart bare metal)" in page
