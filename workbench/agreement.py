"""How diagnoses agree with what people said they should be (plain dicts in, plain dicts out).

An *expectation* is ``{"outcome", "domain", "subdomain", "nodes"}``: a regression case's, a human
review's, or an evaluation set's ``expected.json``. A *diagnosis* is the engine's document
(docs/diagnosis.md).
"""

from __future__ import annotations

from diagnoses.trials import verdict_key

OUTCOMES = ("attributed", "ambiguous", "unattributed")


def key(document: dict) -> dict:
    """The parts of a diagnosis that a change or a review is about (``diagnoses.trials.verdict_key``)."""
    return verdict_key(document)


def differences(expected: dict, document: dict) -> list[str]:
    """What in ``document`` differs from ``expected``, one sentence each (empty: it agrees).

    The domain and subdomain count for every outcome (null when unattributed, ``ambiguous`` when
    ambiguous); the root cause's nodes only when an attribution is expected.
    """
    found = key(document)
    out = []
    for name in ("outcome", "domain", "subdomain"):
        want = expected.get(name) or None
        have = found[name] or None
        if want != have:
            out.append(f"{name}: expected {want or '-'}, got {have or '-'}")
    if expected["outcome"] == "attributed" and found["outcome"] == "attributed":
        want_nodes = sorted(expected.get("nodes") or ())
        if want_nodes != found["nodes"]:
            out.append(f"nodes: expected {_nodes(want_nodes)}, got {_nodes(found['nodes'])}")
    return out


def _nodes(names: list[str]) -> str:
    return ", ".join(names) or "(the job)"


def changed(before: dict | None, after: dict) -> bool:
    """Would ``after`` replace ``before`` with a different answer (outcome, classification, rule or nodes)?"""
    return before is None or key(before) != key(after)


def summarise(pairs: list[tuple[dict, dict]]) -> dict:
    """Agreement of diagnoses with expectations, over (expected, diagnosis) pairs.

    - ``accuracy``: share of diagnoses whose outcome, domain and subdomain are the expected ones, in all
      and ``by_outcome`` (grouped by the expected outcome);
    - ``node_precision``: of the root-cause nodes named by attributions that were expected to be
      attributions, the share that the expectation names too (None when no node was named);
    - ``false_attributions``: attributions where none was expected, or of another domain/subdomain.
    """
    by_outcome = {outcome: {"total": 0, "correct": 0} for outcome in OUTCOMES}
    correct = named = right_nodes = false = 0
    for expected, document in pairs:
        found = key(document)
        group = by_outcome.setdefault(expected["outcome"], {"total": 0, "correct": 0})
        group["total"] += 1
        same_class = not [d for d in differences(expected, document) if not d.startswith("nodes:")]
        if same_class:
            group["correct"] += 1
            correct += 1
        if found["outcome"] == "attributed":
            if not same_class:
                false += 1
            if expected["outcome"] == "attributed":
                truth = set(expected.get("nodes") or ())
                named += len(found["nodes"])
                right_nodes += len(truth.intersection(found["nodes"]))
    for group in by_outcome.values():
        group["accuracy"] = _ratio(group["correct"], group["total"])
    return {
        "total": len(pairs),
        "correct": correct,
        "accuracy": _ratio(correct, len(pairs)),
        "by_outcome": by_outcome,
        "node_precision": _ratio(right_nodes, named),
        "nodes_named": named,
        "false_attributions": false,
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
