"""The one line that names every rank the dumps blame, with its nodes: the root cause's summary.

Built from the report's culprits (`Report.culprits`: the findings that name ranks a hung collective waited for),
the same set whose events give the root cause its nodes, so that the summary, the nodes and the action cannot
disagree: "Rank 5 on gpu-b never entered gloo:all_reduce #4 (process group 6 (dp); 3 ranks waited) and never entered
gloo:all_reduce #4 (process group 0 (default_pg); 4 ranks waited)". One part per set of ranks, in the order the
collectives they missed were first entered; "Ranks 6-7", never "Rank 6-7".
"""

from __future__ import annotations

from collections.abc import Callable

from engine.flight_recorder.findings import Finding, FindingKind, count_label, group_label, ranks_label

SHOWN_PARTS = 4  # sets of ranks named; the others are counted
SHOWN_MISSED = 3  # collectives named per set of ranks
SHOWN_NODES = 4  # nodes named per set of ranks


def verdict(
    culprits: tuple[Finding, ...], node_of: Callable[[int], str | None], first: Callable[[Finding], float]
) -> str:
    """ "" when nothing is blamed. `node_of` places a rank (None: unplaced); `first` orders the findings (when the
    collective was first entered)."""
    by_ranks: dict[tuple[int, ...], list[Finding]] = {}
    for finding in sorted(culprits, key=first):
        by_ranks.setdefault(finding.ranks, []).append(finding)
    parts = []
    for index, (ranks, findings) in enumerate(list(by_ranks.items())[:SHOWN_PARTS]):
        parts.append(f"{ranks_label(ranks, capital=index == 0)}{_where(ranks, node_of)} {_missed_all(findings)}")
    if len(by_ranks) > SHOWN_PARTS:
        parts.append(f"and {len(by_ranks) - SHOWN_PARTS} more sets of ranks")
    return "; ".join(parts)


def _where(ranks: tuple[int, ...], node_of: Callable[[int], str | None]) -> str:
    nodes = sorted({node_of(rank) or "" for rank in ranks})
    named = [node for node in nodes if node]
    if not named:
        return " (not placed on a node)"
    shown = ", ".join(named[:SHOWN_NODES])
    if len(named) > SHOWN_NODES:
        shown += f" and {len(named) - SHOWN_NODES} more nodes"
    if len(named) < len(nodes):
        shown += " and a node the rank map does not name"
    return f" on {shown}"


def _missed_all(findings: list[Finding]) -> str:
    """ "never entered A (...), B (...) and C (...)": the collectives never entered named once, as the others."""
    entered = [finding for finding in findings if finding.kind == FindingKind.NEVER_ENQUEUED and not finding.p2p]
    phrases = [_missed(finding) for finding in findings if finding not in entered]
    if entered:
        phrases.insert(0, "never entered " + _listed([_collective(finding) for finding in entered]))
    return _listed(phrases)


def _listed(items: list[str]) -> str:
    shown = items[:SHOWN_MISSED] + ([f"{len(items) - SHOWN_MISSED} more"] if len(items) > SHOWN_MISSED else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _collective(finding: Finding) -> str:
    where = f"process group {group_label(finding.process_group, finding.pg_desc)}"
    return f"{finding.op} #{finding.seq} ({where}; {count_label(finding.waiting)} waited)"


def _missed(finding: Finding) -> str:
    where = f"process group {group_label(finding.process_group, finding.pg_desc)}"
    collective = f"{finding.op} #{finding.seq}"
    if finding.kind == FindingKind.NOT_STARTED:
        return f"enqueued {collective} but never started it ({where}; {count_label(finding.waiting)} waited)"
    if finding.kind == FindingKind.MISSING_DUMP:
        return f"left no dump while {count_label(finding.waiting)} waited in {collective} ({where})"
    if finding.p2p:
        return f"never posted the operation matching {finding.op} (p2p #{finding.seq}, {where})"
    return "never entered " + _collective(finding)
