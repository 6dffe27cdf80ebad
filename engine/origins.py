"""Where a cascade began, from its structure: the peers the symptoms name.

When a node dies or its process crashes, the other nodes' errors name it: NCCL's ``Got completion from peer
10.0.0.5<34567>`` and ``Call to recv from 10.0.0.5<51234> failed``, Gloo's ``Connection closed by peer
[10.0.0.5]:31567``. A rule's ``points_at`` names the capture holding that peer; NCCL's own start-up lines (``note``
rules with an ``address`` capture: ``Bootstrap : Using eth0:10.0.0.5<0>``) and the hosts' names tell which node an
address is. When the errors of several nodes converge on one node, a ``converge`` rule nominates it as the likely
origin: a hint (``Event.hint``), so the diagnosis names the node without attributing it (docs/rules.md, "Origins").
"""

from __future__ import annotations

import re
from collections import defaultdict

from engine.context import Attempt, History
from engine.events import Event
from engine.node_names import NodeNames
from engine.ruleset import Rule

PORT = re.compile(r"^\[?(?P<host>[^\]<>\s]+?)\]?(?:<\d+>|:\d+)?[,.;:]*$")  # 10.0.0.5<34567>, [10.0.0.5]:31567
IPV4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")


def address_book(events: list[Event], nodes: NodeNames) -> dict[str, str]:
    """Address -> node, from the ``address`` captures of note lines placed on a node of the attempt."""
    book: dict[str, str] = {}
    for event in events:
        address = event.captures.get("address")
        if event.rule.role == "note" and address and event.node is not None and nodes.knows(event.node):
            book.setdefault(_bare(address), event.node)
    return book


def resolve(peer: str, nodes: NodeNames, book: dict[str, str]) -> str | None:
    """The attempt's node a peer names: a host name (full or short), an address the book knows, or an IPv4 address
    a node's name spells (``ip-10-0-0-5``, as cloud hosts are named); None when nothing says."""
    bare = _bare(peer)
    if nodes.knows(bare):
        return nodes.canonical(bare)
    if bare in book:
        return book[bare]
    if (match := IPV4.match(bare)) is not None:
        dashed = "-".join(match.groups())
        named = [node for node in sorted(nodes.nodes) if dashed in node]
        if len(named) == 1:
            return named[0]
    return None


def convergence_events(rules: list[Rule], events: list[Event], attempt: Attempt, nodes: NodeNames) -> list[Event]:
    """For each ``converge`` rule: one event on the node most of the reporting nodes' pointers name, when at least
    ``reporters`` nodes (at most all the others) name it and no other node is named as often."""
    if not rules:
        return []
    book = address_book(events, nodes)
    out = []
    for rule in rules:
        condition = rule.converge
        named: dict[str, dict[str, list[Event]]] = defaultdict(lambda: defaultdict(list))  # target -> reporter -> lines
        for event in events:
            points_at = event.rule.points_at
            if not points_at or event.node is None or not condition.pointers.selects(event.rule):
                continue
            target = resolve(event.captures.get(points_at, ""), nodes, book)
            if target is not None and target != event.node:
                named[target][event.node].append(event)
        if not named:
            continue
        ranked = sorted(((len(reporters), target) for target, reporters in named.items()), key=lambda r: (-r[0], r[1]))
        count, target = ranked[0]
        if len(ranked) > 1 and ranked[1][0] == count:
            continue  # two nodes named as often (the two ends of a broken link name each other): no single origin
        if count < min(condition.reporters, max(len(attempt.nodes) - 1, 1)):
            continue
        pointers = sorted((e for lines in named[target].values() for e in lines), key=Event.sort_key)
        first = pointers[0]
        reporters = ", ".join(sorted(named[target]))
        out.append(
            Event(
                rule=rule, node=target, time=first.time, exact=False, source=first.source, kind=first.kind,
                ref=first.ref, text=first.text, last=first.time, hint=True,
                low=first.time if first.exact else first.low, high=first.time if first.exact else first.high,
                captures={"target": target, "reporters": str(count), "reporter_nodes": reporters,
                          "pointers": str(len(pointers))},
            )
        )  # fmt: skip
    return out


def first_events(rules: list[Rule], events: list[Event], attempt: Attempt) -> list[Event]:
    """For each ``first`` rule: one event on the node whose selected line came first, when the next node's came more
    than ``margin`` later. Only lines at an exact time that carry every capture the rule's ``where`` names, and pass
    it, count (torchrun's lines with an exit code)."""
    out = []
    for rule in rules:
        condition = rule.first
        chosen = [
            e
            for e in events
            if condition.events.selects(e.rule) and e.node is not None and e.exact
            and all(f.name in e.captures and f.accepts(e.captures) for f in rule.filters)
        ]  # fmt: skip
        if len(attempt.nodes) < 2 or not chosen:
            continue
        earliest: dict[str, Event] = {}
        for event in sorted(chosen, key=Event.sort_key):
            earliest.setdefault(event.node, event)
        ordered = sorted(earliest.values(), key=Event.sort_key)
        if len(ordered) > 1 and ordered[1].time - ordered[0].time <= condition.margin:
            continue
        lead = ordered[0]
        after = (
            f"{ordered[1].time - lead.time:.0f} s before the next node's"
            if len(ordered) > 1
            else "and no other node's worker failed but for the teardown"
        )
        out.append(
            Event(
                rule=rule, node=lead.node, time=lead.time, exact=True, source=lead.source, kind=lead.kind, ref=lead.ref,
                text=lead.text, last=lead.time, hint=True, captures={**lead.captures, "lead": after},
            )
        )  # fmt: skip
    return out


def history_events(rules: list[Rule], events: list[Event], attempt: Attempt, history: History | None) -> list[Event]:
    """For each ``history`` rule: one event on each node that shows a line of its ``symptoms`` in this attempt and,
    in the bundle's history, a verdict of record in one of its ``domains`` of an attempt that ended at most
    ``within`` before this one started. A hint (``Event.hint``): the history names the node, never attributes it.
    The event lies at the node's first symptom; its ref and line are the history's (the latest such verdict)."""
    if not rules or history is None or not history.nodes:
        return []
    start = attempt.start.timestamp()
    out = []
    for rule in rules:
        condition = rule.history
        first: dict[str, Event] = {}
        for event in sorted(events, key=Event.sort_key):
            if event.node is not None and not event.hint and condition.symptoms.selects(event.rule):
                first.setdefault(event.node, event)
        for node in sorted(first):
            past = [
                verdict
                for verdict in history.nodes
                if verdict.node == node and verdict.domain in condition.domains
                and 0 <= start - verdict.end.timestamp() <= condition.within
            ]  # fmt: skip
            if not past:
                continue
            latest = max(past, key=lambda verdict: (verdict.end, verdict.ref))
            symptom = first[node]
            days = (start - latest.end.timestamp()) / 86400
            reviewed = "reviewed" if latest.reviewed else "the engine's"
            text = (
                f"history: {node} was the root cause of {latest.name} ({latest.domain}/{latest.subdomain}, "
                f"{reviewed}), which ended {latest.end.strftime('%Y-%m-%dT%H:%M:%SZ')}, {days:.1f} days before this "
                f"attempt started; {len(past)} such verdict(s) in the window"
            )
            out.append(
                Event(
                    rule=rule, node=node, time=symptom.time, exact=symptom.exact, source="history", kind=symptom.kind,
                    ref=latest.ref, text=text, last=symptom.time, hint=True, low=symptom.low, high=symptom.high,
                    captures={"verdicts": str(len(past)), "last": latest.name, "verdict":
                              f"{latest.domain}/{latest.subdomain}", "days": f"{days:.1f}", "symptom": symptom.rule.id},
                )
            )  # fmt: skip
    return out


def _bare(peer: str) -> str:
    """A peer without its port or brackets: ``10.0.0.5<34567>`` and ``[10.0.0.5]:31567`` are ``10.0.0.5``."""
    peer = peer.strip()
    if peer.count(":") > 1 and not peer.startswith("["):  # an IPv6 address, perhaps with NCCL's <port>
        return peer.split("<", 1)[0].split("%", 1)[0]
    match = PORT.match(peer)
    return match.group("host") if match else peer
