"""A revision tried on stored attempts: each attempt's stored diagnosis beside the one the revision gives, and what
changed (outcome, classification, root-cause rule, nodes). Reads only: the stored bundles, never a connector; nothing
is stored. The pattern trial of the workbench and of the API (docs/leads.md) and the API's backtest use it."""

from __future__ import annotations

from diagnoses.models import Attempt
from diagnoses.selectors import attempt_context
from rules.engine_limits import bundle_limits
from rules.models import RuleSetRevision
from rules.selectors import revision_engine

COMPARED = ("outcome", "domain", "subdomain", "rule", "nodes")


def verdict_key(document: dict | None) -> dict | None:
    """The parts of a diagnosis a change is about."""
    if document is None:
        return None
    root = document.get("root_cause") or {}
    return {
        "outcome": document["outcome"],
        "domain": document.get("domain"),
        "subdomain": document.get("subdomain"),
        "rule": root.get("rule"),
        "nodes": sorted(root.get("nodes") or ()),
    }


def revision_tried(*, revision: RuleSetRevision, attempts: list[Attempt]) -> list[dict]:
    """For each attempt (with ``current_diagnosis`` loaded): ``attempt``, ``before`` and ``after`` (the verdict keys
    of the stored diagnosis and of the revision's), ``changes`` (``{part: [before, after]}``), or ``failure``."""
    engine = revision_engine(revision)
    rows = []
    for attempt in attempts:
        before = verdict_key(attempt.current_diagnosis.document if attempt.current_diagnosis else None)
        try:
            with attempt_context(attempt) as context:
                after = verdict_key(engine.diagnose(context, limits=bundle_limits()))
        except Exception as exc:  # the caller shows why the attempt could not be diagnosed
            rows.append({"attempt": attempt, "failure": f"{type(exc).__name__}: {exc}"})
            continue
        changes = {
            part: [None if before is None else before[part], after[part]]
            for part in COMPARED
            if before is None or before[part] != after[part]
        }
        rows.append({"attempt": attempt, "before": before, "after": after, "changes": changes})
    return rows
