"""The leads of a bundle: masking, wording, the score's signals, determinism and the drafted rule."""

import pytest
import re2

from engine import Engine, RuleSetError, load_rules, parse_ruleset
from engine.bundle import load_bundle
from leads import find_leads, mine_attempt, rule_draft
from leads.masking import Masker
from leads.rule_drafts import pattern_of
from leads.wording import informational, wording

NODES = ["node01", "node02", "node03", "node04"]
UNKNOWN = (
    "2026-11-02T10:14:07Z fabricd[311]: port 4 of switch sw-7 wedged: credit loop failure on lane 3, traffic halted"
)


def test_masking_masks_what_varies():
    masker = Masker(("node01", "gpu-a17.example"))
    text = masker.mask(
        "node01:2814086:2814172 [6] rank 12 at 2026-11-02 10:14:07.123 wrote /scratch/ckpt/step_400.pt "
        "to 10.0.3.7:29500 id 0x7f3a2b ecc 1b2c3d4e GPU 0000:3b:00.0 on gpu-a17.example uuid "
        "123e4567-e89b-12d3-a456-426614174000 after 42 tries, mlx5_0"
    )
    assert text == (
        "<HOST>:<NUM>:<NUM> [<NUM>] rank <RANK> at <TIME> wrote <PATH> to <ADDR> id <HEX> ecc <HEX> GPU <ADDR> "
        "on <HOST> uuid <ID> after <NUM> tries, mlx<NUM>_<NUM>"
    )


def test_wording_weights_and_informational_lines():
    assert wording("Killed process 4242 (python)") == (1.0, "killed")
    assert wording("connect failed, giving up")[0] == 0.7
    assert wording("Received SIGTERM: 15")[0] == 0.4
    assert wording('  File "train.py", line 12, in main') == (0.0, "")  # a stack frame
    assert wording("Failures:")[0] == 0.4  # a heading
    assert wording("epoch 3 loss 0.41") == (0.0, "")
    assert informational("node01:1:2 [0] NCCL INFO NET/IB : error handling enabled")
    assert not informational("node01:1:2 [0] NCCL WARN NET/IB : error 12")


def _bundle(tmp_path, write_bundle, lines_by_node, **attempt):
    logs = {f"{node}/syslog.log": lines for node, lines in lines_by_node.items()}
    return load_bundle(write_bundle(tmp_path, logs=logs, **attempt))


def test_the_unknown_line_on_one_node_leads_over_the_cascade_on_all(tmp_path, write_bundle):
    cascade = "2026-11-02T10:15:{:02d}Z trainer[99]: collective timed out waiting for peers"
    context = _bundle(
        tmp_path,
        write_bundle,
        {
            "node01": [cascade.format(1), cascade.format(2)],
            "node02": [UNKNOWN, cascade.format(3)],
            "node03": [cascade.format(4)],
            "node04": [cascade.format(5), "2026-11-02T10:16:00Z systemd[1]: Started session 4."],
        },
    )
    leads = find_leads(context)
    first = leads[0].document()
    assert (first["node"], first["file"], first["line"], first["stream"]) == (
        "node02",
        "logs/node02/syslog.log",
        1,
        "syslog",
    )
    assert first["text"] == UNKNOWN
    assert "on 1 of 4 nodes" in first["why"]
    assert "the first symptom" in first["why"]
    assert leads[1].document()["text"].endswith("waiting for peers")
    assert [lead.score for lead in leads] == sorted((lead.score for lead in leads), reverse=True)
    assert len(leads) == 2  # the session line has no error-like wording


def test_lines_a_rule_matches_are_not_leads(tmp_path, write_bundle):
    context = _bundle(
        tmp_path,
        write_bundle,
        {
            "node02": [
                "Nov  2 10:14:07 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                UNKNOWN,
            ]
        },
    )
    engine = Engine(load_rules("rules/packs/default"))
    analysis = engine.analyse(context)
    assert analysis.diagnosis["outcome"] == "attributed"
    texts = [lead.template.first.text for lead in find_leads(context, analysis.events)]
    assert texts == [UNKNOWN]
    assert len(find_leads(context)) == 2  # without the rules' events both are leads


def test_the_store_s_normal_lines_lower_a_template(tmp_path, write_bundle):
    context = _bundle(tmp_path, write_bundle, {"node02": [UNKNOWN]})
    key = mine_attempt(context).places[("logs/node02/syslog.log", 1)]
    fresh, seen = find_leads(context, normal={}), find_leads(context, normal={key: 3})
    assert seen[0].score == round(fresh[0].score / 3, 4)  # 1 / (1 + log2(1 + 3))
    assert "never seen as normal" in fresh[0].why
    assert "seen 3 times as normal" in seen[0].why


def test_same_bundle_same_leads(tmp_path, write_bundle):
    context = _bundle(tmp_path, write_bundle, {"node02": [UNKNOWN, UNKNOWN.replace("port 4", "port 9")]})
    assert [lead.document() for lead in find_leads(context)] == [lead.document() for lead in find_leads(context)]
    (template,) = mine_attempt(context).templates.values()
    assert template.lines == 2


def test_a_drafted_rule_loads_once_classified_and_matches_its_lines(tmp_path, write_bundle):
    context = _bundle(tmp_path, write_bundle, {"node02": [UNKNOWN]})
    template = find_leads(context)[0].template
    pattern = pattern_of(template.text)
    assert re2.search(
        pattern, "fabricd[7]: port 17 of switch sw-12 wedged: credit loop failure on lane 0, traffic halted"
    )
    assert not re2.search(pattern, "fabricd[7]: port 17 of switch sw-12 recovered")
    draft = rule_draft(template.text, template.key, "system")
    with pytest.raises(RuleSetError, match="domain"):  # refused until a person classifies it
        parse_ruleset([("draft.yaml", draft)])
    classified = draft.replace("    domain:  ", "    domain: hardware  ").replace(
        "subdomain:  ", "subdomain: nvswitch  "
    )
    engine = Engine(parse_ruleset([("draft.yaml", classified)]))
    diagnosis = engine.diagnose(context)
    assert (diagnosis["outcome"], diagnosis["root_cause"]["rule"]) == ("attributed", f"site.pattern.{template.key}")
