"""A rule-set revision's text and its compiled form (pure: no database).

A revision is one YAML text. The default pack (a directory of rule files) becomes such a text by
concatenating its files as separate YAML documents, so the pack loaded from disk and the pack stored
as revision 1 compile to the same rule set, with the same digest.
"""

from dataclasses import replace
from pathlib import Path

from engine import parse_ruleset
from engine.loader import read_rule_files
from engine.ruleset import RuleSet


def pack_text(path: str | Path) -> str:
    """The rule files at ``path`` (a file or a directory) as one multi-document YAML text."""
    documents = []
    for name, text in read_rule_files(path):
        body = text if text.endswith("\n") else text + "\n"
        documents.append(f"# {name}\n{body}")
    return "---\n".join(documents)


def compile_revision(name: str, number: int, text: str) -> RuleSet:
    """The engine's rule set for revision ``number`` of rule set ``name``; raises ``RuleSetError``."""
    ruleset = parse_ruleset([(f"{name}.yaml", text)], name=name)
    return replace(ruleset, name=name, version=str(number))
