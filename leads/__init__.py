"""Leads: the lines of an attempt most likely to show its failure that no rule knows yet, and the log templates
they belong to (docs/leads.md). Pure Python like the engine: no Django, no database, no clock.

``find_leads(context, events)`` mines the attempt's templates (``leads.mining``) and ranks them
(``leads.score``); the store's counts of normal lines, when given, add the rarity signal. ``rule_draft`` turns a
template into a rule of the rule language (``leads.rule_drafts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.context import AttemptContext
from engine.events import Event
from leads.mining import Explained, Mined, Template, mine, template_key
from leads.rule_drafts import rule_draft, template_parts
from leads.score import Lead, rank

__all__ = [
    "Lead",
    "Mined",
    "Template",
    "find_leads",
    "mine_attempt",
    "rank",
    "rule_draft",
    "template_key",
    "template_parts",
]


def mine_attempt(context: AttemptContext, events: Iterable[Event] = (), *, settled: bool = False) -> Mined:
    """The attempt's templates; ``events``: the analysis's events (the lines the rules matched); ``settled``: the
    rules attributed the attempt (its lines count as normal)."""
    return mine(context, Explained(events), settled=settled)


def find_leads(
    context: AttemptContext, events: Iterable[Event] = (), *, normal: Mapping[str, int] | None = None, limit: int = 5
) -> list[Lead]:
    """The attempt's best ``limit`` leads, best first."""
    return rank(mine_attempt(context, events), normal, limit)
