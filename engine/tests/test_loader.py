"""The rule loader: a valid rule loads; every kind of mistake is named with its file, line and field."""

import pytest

from engine import RuleSetError, load_rules, parse_ruleset

GOOD = """
rules:
  - id: gpu.xid.bus
    description: The GPU fell off the bus
    streams: [system]
    pattern: 'NVRM: Xid \\(PCI:(?P<pci>[^)]+)\\): (?P<xid>\\d+),'
    where: {xid: {in: [79]}}
    role: cause
    domain: hardware
    subdomain: gpu.bus
    precedence: 90
    explains:
      - {tags: [cascade], within: 1h}
  - id: nccl.timeout
    description: NCCL watchdog timeout
    streams: [app]
    pattern: 'Watchdog caught collective operation timeout'
    role: symptom
    kind: cascade
    tags: [cascade]
"""


def load(text: str):
    return parse_ruleset([("pack.yaml", text)])


def errors(text: str) -> list[str]:
    with pytest.raises(RuleSetError) as caught:
        load(text)
    return [str(e) for e in caught.value.errors]


def test_a_valid_rule_set_loads_with_its_relations():
    ruleset = load(GOOD)
    rules = ruleset.by_id()
    assert sorted(rules) == ["gpu.xid.bus", "nccl.timeout"]
    bus = rules["gpu.xid.bus"]
    assert bus.classification == ("hardware", "gpu.bus")
    assert bus.explains[0].tags == frozenset({"cascade"})
    assert bus.explains[0].within == 3600
    assert ruleset.digest.startswith("sha256:")


def test_the_digest_changes_with_the_text():
    assert load(GOOD).digest != load(GOOD.replace("precedence: 90", "precedence: 80")).digest


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (
            ("pattern: 'NVRM: Xid", "pattern: '(NVRM: Xid"),
            "pack.yaml:6: rule 'gpu.xid.bus', field 'pattern': not a valid RE2",
        ),
        (
            ("domain: hardware", "domain: hardwre"),
            "pack.yaml:9: rule 'gpu.xid.bus', field 'domain': unknown domain 'hardwre'",
        ),
        (("subdomain: gpu.bus", "subdomain: gpus.bus"), "field 'subdomain': 'gpus.bus' is not a subdomain of hardware"),
        (
            ("precedence: 90", "precedence: 90\n    colour: red"),
            "pack.yaml:12: rule 'gpu.xid.bus', field 'colour': unknown field",
        ),
        (("id: nccl.timeout", "id: gpu.xid.bus"), "field 'id': duplicate id (first defined at pack.yaml:3)"),
        (("tags: [cascade], within", "tags: [cascad], within"), "field 'explains': no rule has the tag 'cascad'"),
        (("within: 1h", "within: soon"), "field 'explains.within': 'soon' is not a duration"),
        (("role: symptom", "role: sympton"), "field 'role': 'sympton' is not one of cause, symptom, context"),
        (("pattern: 'Watchdog caught", "pattern: '(?:x)?|Watchdog caught"), "matches an empty line"),
        (
            ("where: {xid: {in: [79]}}", "where: {pid: {in: [79]}}"),
            "field 'where.pid': the pattern has no named capture",
        ),
    ],
)
def test_mistakes_are_named_with_file_line_and_field(mutation, expected):
    old, new = mutation
    assert old in GOOD
    found = errors(GOOD.replace(old, new, 1))
    assert any(expected in message for message in found), found


def test_a_pattern_re2_cannot_compile_is_rejected_not_run():
    # A backreference needs backtracking; RE2 refuses it, so no rule can hang the engine.
    found = errors(GOOD.replace("pattern: 'Watchdog caught", "pattern: '(a+)+\\1 Watchdog caught"))
    assert any("pack.yaml:17: rule 'nccl.timeout', field 'pattern': not a valid RE2 pattern" in m for m in found), found


def test_invalid_yaml_names_its_line():
    found = errors("rules:\n  - id: x\n    description: [unclosed\n")
    assert found
    assert found[0].startswith("pack.yaml:")
    assert "not valid YAML" in found[0]


def test_the_default_pack_loads():
    ruleset = load_rules("rules/packs/default")
    assert ruleset.name == "default"
    assert len(ruleset.rules) > 50
    assert all(rule.sources for rule in ruleset.rules), "every rule says where its format comes from"


def test_the_documented_rules_load_with_the_default_pack():
    import re
    from pathlib import Path

    from engine.loader import read_rule_files

    docs = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    pack = read_rule_files("rules/packs/default")
    known = {rule.id for rule in parse_ruleset(pack).rules}
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", docs.read_text(), re.S) if b.startswith("rules:")]
    new = [b for b in blocks if not set(re.findall(r"- id: (\S+)", b)) <= known]
    assert new, "docs/rules.md shows at least one complete new rule"
    for number, block in enumerate(new):
        parse_ruleset([*pack, (f"docs-example-{number}.yaml", block)])
