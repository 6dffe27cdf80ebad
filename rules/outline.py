"""A revision's text as the editor outlines it (pure: no database): its files (the YAML documents, each named by
the ``# name.yaml`` comment that ``revisions.pack_text`` puts at its top) and each file's rules, with the lines
they span, so that one rule can be shown and replaced alone.

A rule's lines run from its ``- id:`` item to its last line of content before the next item (comment and blank
lines between two rules belong to neither). Rules written in flow style (``rules: [{id: ...}]``) have no lines of
their own and are not outlined; the whole text can still be edited.
"""

import re
from dataclasses import dataclass, field

import yaml

from engine.loader import COMPOSER

SEPARATOR = re.compile(r"^---(\s|$)")  # a document marker at column 0 ends the document before it
FILE_NAME = re.compile(r"^#\s*(\S+\.ya?ml)\s*$")


@dataclass(frozen=True)
class RuleSpan:
    id: str
    description: str
    file: str
    first: int  # its lines in the whole text, 1-based, inclusive
    last: int
    text: str  # those lines

    @property
    def lines(self) -> int:
        return self.last - self.first + 1


@dataclass
class File:
    name: str
    first: int
    last: int
    rules: list[RuleSpan] = field(default_factory=list)


def outline(text: str, *, rules: bool = True) -> list[File]:
    """The text's files in order, each with its rules (none for a file whose YAML does not parse; none at all
    without ``rules``: the files alone need no parsing)."""
    lines = text.split("\n")
    files = []
    for number, (first, last) in enumerate(_documents(lines), start=1):
        name = next((m.group(1) for line in lines[first - 1 : last] if (m := FILE_NAME.match(line))), "")
        file = File(name=name or f"document {number}", first=first, last=last)
        if rules:
            file.rules = _rules(lines, file)
        files.append(file)
    return files


def rule_find(files: list[File], rule_id: str) -> RuleSpan | None:
    return next((rule for file in files for rule in file.rules if rule.id == rule_id), None)


def file_of_line(files: list[File], line: int) -> File | None:
    """The file (document) holding the text's line ``line``."""
    return next((file for file in files if file.first <= line <= file.last), None)


def rule_replace(text: str, rule: RuleSpan, replacement: str) -> str:
    """``text`` with the lines of ``rule`` replaced by ``replacement`` (line ends normalised, no trailing blank
    lines); the rest of the text is kept byte for byte."""
    lines = text.split("\n")
    body = replacement.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n").split("\n")
    return "\n".join([*lines[: rule.first - 1], *body, *lines[rule.last :]])


def _documents(lines: list[str]) -> list[tuple[int, int]]:
    """The (first, last) line of each document, its ``---`` marker excluded."""
    spans, first = [], 1
    for number, line in enumerate(lines, start=1):
        if SEPARATOR.match(line):
            if number > first:
                spans.append((first, number - 1))
            first = number + 1
    if first <= len(lines) and any(line.strip() for line in lines[first - 1 :]):
        spans.append((first, len(lines)))
    return spans


def _rules(lines: list[str], file: File) -> list[RuleSpan]:
    body = "\n".join(lines[file.first - 1 : file.last])
    try:
        root = yaml.compose(body, Loader=COMPOSER)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    items = next(
        (value.value for key, value in root.value if key.value == "rules" and isinstance(value, yaml.SequenceNode)), []
    )
    rules = []
    for item in items:
        if not isinstance(item, yaml.MappingNode):
            continue
        scalars = {key.value: value.value for key, value in item.value if isinstance(value, yaml.ScalarNode)}
        first = file.first + item.start_mark.line
        dash = lines[first - 1][: item.start_mark.column].rstrip()
        if not dash.endswith("-") or dash[:-1].strip():
            continue  # not a block sequence's item starting its line (flow style)
        last = _last_line(lines, first, len(dash) - 1, file.last)
        rules.append(
            RuleSpan(
                id=str(scalars.get("id", "")),
                description=str(scalars.get("description", "")),
                file=file.name,
                first=first,
                last=last,
                text="\n".join(lines[first - 1 : last]),
            )
        )
    return rules


def _last_line(lines: list[str], first: int, dash_column: int, limit: int) -> int:
    """The item's last line of content: the lines after ``first`` indented past its dash (or blank, or comments),
    without the blank and comment lines at their end."""
    last = first
    for number in range(first + 1, limit + 1):
        line = lines[number - 1]
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(line) - len(stripped) <= dash_column:
            break
        last = number
    return last
