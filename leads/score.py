"""The lead score: how likely a template's lines are to show the failure, from 0 to 1, deterministic.

    score = wording x repetition x concentration x (0.5 + 0.5 x earliness) x rarity

- wording: the strongest error-like word of its lines (``leads.wording``: 1.0, 0.7 or 0.4), a quarter of that
  when any of its lines is printed at an informational level;
- repetition: 1 / (1 + log10(lines)): one line counts fully, ten lines half, a hundred a third (a line that every
  rank prints over and over is chatter or a cascade, not the origin);
- concentration: on k of the attempt's n nodes, 1 - 0.75 (k - 1) / (n - 1): one node 1, every node 0.25
  (1 for a one-node attempt, 0.75 when no line of it names a node);
- earliness: 1 / (1 + delay / 300 s), the delay of its first line after the first symptom (the earliest line with
  a word of weight 0.7 or more); 1 at or before it, 0.5 five minutes later, 0.75 when neither has a time;
- rarity: 1 / (1 + log2(1 + normal)), ``normal`` the lines of the template the store has seen known to be normal
  (1 without a store, as ``manage.py diagnose --leads`` runs).

Templates a rule matched are not leads. Leads are ordered by score, then the earlier first line, then its file and
line; one lead per template, its first line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from engine.report import iso
from leads.mining import Mined, Template

INFORMATIONAL_FACTOR = 0.25
EARLINESS_SECONDS = 300.0
UNTIMED_EARLINESS = 0.75
UNPLACED_CONCENTRATION = 0.75


@dataclass(frozen=True)
class Lead:
    template: Template
    score: float
    why: str

    def document(self) -> dict:
        """The lead as ``manage.py diagnose --leads`` and the API show it."""
        line = self.template.first
        return {
            "text": line.text,
            "node": line.node,
            "stream": line.stream,
            "file": line.file,
            "line": line.line,
            "time": iso(line.time),
            "template": self.template.text,
            "template_id": self.template.key,
            "score": self.score,
            "why": self.why,
        }


def rank(mined: Mined, normal: Mapping[str, int] | None = None, limit: int = 5) -> list[Lead]:
    """The best ``limit`` leads of ``mined``; ``normal``: the store's normal lines by template key."""
    leads = []
    for template in mined.templates.values():
        if template.explained or template.weight == 0.0:
            continue
        lead = _score(template, mined, None if normal is None else normal.get(template.key, 0))
        if lead.score > 0:
            leads.append(lead)
    leads.sort(key=lambda lead: (-lead.score, *lead.template.first.key()))
    return leads[:limit]


def _score(template: Template, mined: Mined, normal: int | None) -> Lead:
    why = []
    wording = template.weight
    why.append(f"error-like wording ({template.word})")
    if template.informational:
        wording *= INFORMATIONAL_FACTOR
        why.append("printed at an informational level")
    repetition = 1 / (1 + math.log10(template.lines))
    why.append("1 line" if template.lines == 1 else f"{template.lines} lines")
    nodes = len(template.nodes)
    if mined.nodes <= 1:
        concentration = 1.0
    elif nodes == 0:
        concentration = UNPLACED_CONCENTRATION
        why.append("no node named")
    else:
        concentration = 1 - 0.75 * (nodes - 1) / (mined.nodes - 1)
        why.append(f"on {nodes} of {mined.nodes} nodes")
    first = template.first
    if first.time is None or mined.first_symptom is None:
        earliness = UNTIMED_EARLINESS
    else:
        delay = max(0.0, first.time - mined.first_symptom)
        earliness = 1 / (1 + delay / EARLINESS_SECONDS)
        why.append("the first symptom" if delay == 0 else f"{_duration(delay)} after the first symptom")
    if normal is None:
        rarity = 1.0
    else:
        rarity = 1 / (1 + math.log2(1 + normal))
        why.append("never seen as normal" if normal == 0 else f"seen {normal} times as normal")
    score = wording * repetition * concentration * (0.5 + 0.5 * earliness) * rarity
    return Lead(template, round(score, 4), "; ".join(why))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
