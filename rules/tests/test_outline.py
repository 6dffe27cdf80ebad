"""The editor's outline of a revision's text: its files and their rules with the lines each spans, and one rule
replaced with the rest of the text kept byte for byte."""

from django.conf import settings

from engine import parse_ruleset
from rules.outline import file_of_line, outline, rule_find, rule_replace
from rules.revisions import pack_text

TEXT = """# site/a.yaml
x-catalog: &catalog https://example.org
rules:
  # the first rule
  - id: a.one
    description: the first
    source: *catalog
    pattern: 'one'

  # between two rules: in neither
  - id: a.two
    pattern: >-
      two
      lines
---
# site/b.yaml
rules: [{id: b.flow, pattern: 'x'}]
---
rules:
  - id: c.last
    pattern: 'last'
"""


def test_files_are_named_by_their_header_and_rules_span_their_own_lines():
    files = outline(TEXT)

    assert [(f.name, f.first, f.last) for f in files] == [("site/a.yaml", 1, 14), ("site/b.yaml", 16, 17),
                                                          ("document 3", 19, 22)]  # fmt: skip
    assert [(r.id, r.first, r.last) for f in files for r in f.rules] == [("a.one", 5, 8), ("a.two", 11, 14),
                                                                         ("c.last", 20, 21)]  # fmt: skip
    assert rule_find(files, "a.two").text == "  - id: a.two\n    pattern: >-\n      two\n      lines"
    assert rule_find(files, "b.flow") is None  # flow style: no lines of its own
    assert rule_find(files, "a.one").description == "the first"
    assert file_of_line(files, 17).name == "site/b.yaml"
    assert file_of_line(files, 18) is None  # the "---" between two files


def test_replacing_a_rule_keeps_the_rest_byte_for_byte():
    files = outline(TEXT)
    rule = rule_find(files, "a.one")

    assert rule_replace(TEXT, rule, rule.text) == TEXT
    changed = rule_replace(TEXT, rule, "  - id: a.one\r\n    pattern: 'uno'\r\n\r\n")
    assert changed == TEXT.replace("    description: the first\n    source: *catalog\n    pattern: 'one'\n",
                                   "    pattern: 'uno'\n")  # fmt: skip
    assert [r.id for f in outline(changed) for r in f.rules] == ["a.one", "a.two", "c.last"]


def test_every_rule_of_the_default_pack_is_outlined_and_alone_is_the_same_rule():
    text = pack_text(settings.FAULTLINE_RULES_PATH)
    files = outline(text)
    rules = [r for f in files for r in f.rules]

    assert sorted(r.id for r in rules) == sorted(r.id for r in parse_ruleset([("default.yaml", text)]).rules)
    assert all(r.text.lstrip().startswith(f"- id: {r.id}") for r in rules)
    assert all(rule_replace(text, r, r.text) == text for r in rules)
    assert sum(len(f.rules) for f in files if f.name == "default/gpu-xid.yaml") == 13
