"""Assemble the diagnosis document (docs/diagnosis.md) and its text rendering.

Every list is sorted by explicit keys, so the same bundle and rule set give byte-identical JSON
whatever the order in which files and lines were read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime

from engine.attribution import Attribution, Candidate
from engine.context import STREAM_KINDS, AttemptContext
from engine.events import Event
from engine.flight_recorder.attempt import AttemptDumps
from engine.ruleset import RuleSet
from engine.streams import StreamStats

SCHEMA = "faultline.diagnosis/v1"
ROLE_ORDER = {"root_cause": 0, "candidate": 0, "cascade": 1, "teardown": 2, "context": 3}


def iso(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    moment = datetime.fromtimestamp(round(stamp, 3), UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return text + "Z"


def build(
    context: AttemptContext,
    ruleset: RuleSet,
    result: Attribution,
    stats: list[StreamStats],
    dumps: AttemptDumps | None = None,
) -> dict:
    attempt = context.attempt
    outcome = result.outcome
    root_cause = None
    candidates = []
    domain = subdomain = None
    if outcome == "attributed":
        top = result.candidates[0]
        domain, subdomain = top.domain, top.subdomain
        root_cause = _cause(top)
    else:
        candidates = [_candidate(c) for c in result.candidates]
    if outcome == "ambiguous":
        domains = {c.domain for c in result.candidates}
        domain = domains.pop() if len(domains) == 1 else "ambiguous"
        subdomain = "ambiguous"
    return {
        "schema": SCHEMA,
        "attempt": {"cluster": attempt.cluster, "job_id": attempt.job_id, "attempt": attempt.attempt},
        "outcome": outcome,
        "domain": domain,
        "subdomain": subdomain,
        "root_cause": root_cause,
        "candidates": candidates,
        "affected_nodes": sorted(
            {e.node for e in result.events if e.node is not None and e.role and e.role != "context"}
        ),
        "symptoms": _symptoms(result.events),
        "evidence": _evidence(result, ruleset),
        "sources": _sources(context, stats, dumps),
        "ruleset": {"name": ruleset.name, "version": ruleset.version, "digest": ruleset.digest},
    }


def _cause(candidate: Candidate) -> dict:
    lead = candidate.lead
    return {
        "rule": lead.rule.id,
        "nodes": candidate.nodes,
        **_time(candidate.first if candidate.first != float("inf") else None, candidate.exact, candidate.bounds),
        "summary": lead.summary(),
        "action": lead.rule.action,
    }


def _candidate(candidate: Candidate) -> dict:
    """A candidate of an ambiguous diagnosis, or one an unattributed diagnosis names without establishing it;
    ``nominated`` when only hedged lines (hints) name it."""
    item = {**_cause(candidate), "domain": candidate.domain, "subdomain": candidate.subdomain}
    if candidate.nominated:
        item["nominated"] = True
    return item


def _time(time: float | None, exact: bool, bounds: tuple[float, float], field: str = "time") -> dict:
    """``time`` (or a symptom's ``first``), and for a time not read from the line itself ``time_approx`` and
    ``time_bounds`` (``first_approx``, ``first_bounds``)."""
    if exact:
        return {field: iso(time)}
    return {field: iso(time), f"{field}_approx": True, f"{field}_bounds": [iso(bounds[0]), iso(bounds[1])]}


def _symptoms(events: list[Event]) -> list[dict]:
    groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for event in events:
        if event.role in ("cascade", "teardown"):
            groups[(event.rule.id, event.role)].append(event)
    out = []
    for (rule_id, role), members in groups.items():
        first = min(members, key=Event.sort_key)
        out.append(
            {
                "rule": rule_id,
                "role": role,
                "nodes": sorted({e.node for e in members if e.node is not None}),
                "count": sum(e.count for e in members),
                **_time(first.time, first.exact, (first.low, first.high), "first"),
                "summary": first.rule.description if len(members) > 1 else first.summary(),
            }
        )
    return sorted(out, key=lambda s: (s["first"] or "~", s["rule"], s["role"]))


def _evidence(result: Attribution, ruleset: RuleSet) -> list[dict]:
    settings = ruleset.settings
    roots = [e for e in result.events if e.role in ("root_cause", "candidate")]
    picked = sorted(roots, key=Event.sort_key)[: settings.evidence_cap // 2]
    by_rule: dict[str, list[Event]] = defaultdict(list)
    for event in result.events:
        if event.role in ("cascade", "teardown"):
            by_rule[event.rule.id].append(event)
    symptoms = []
    for members in by_rule.values():
        members.sort(key=Event.sort_key)
        seen_nodes, chosen = set(), []
        for event in members:  # one per node first, so the spread shows
            if event.node not in seen_nodes and len(chosen) < settings.symptom_evidence_per_rule:
                seen_nodes.add(event.node)
                chosen.append(event)
        symptoms.extend(chosen)
    picked += sorted(symptoms, key=Event.sort_key)
    picked += sorted((e for e in result.events if e.role == "context"), key=Event.sort_key)[: settings.context_cap]
    picked = picked[: settings.evidence_cap]
    return [_evidence_item(e, settings.text_cap) for e in picked]


def _evidence_item(event: Event, text_cap: int) -> dict:
    text = event.text if len(event.text) <= text_cap else event.text[:text_cap] + "…"
    item = {
        "role": event.role,
        "rule": event.rule.id,
        "node": event.node,
        "source": event.source,
        **_time(event.time, event.exact, (event.low, event.high)),
        "ref": event.ref,
        "text": text,
    }
    if event.count > 1:
        item["count"] = event.count
    return item


def _sources(context: AttemptContext, stats: list[StreamStats], dumps: AttemptDumps | None) -> list[dict]:
    attempt = context.attempt
    by_name: dict[tuple[str, str], list[StreamStats]] = defaultdict(list)
    for stat in stats:
        by_name[(stat.stream.kind, stat.stream.name)].append(stat)
    out = []
    for (kind, name), members in by_name.items():
        broken = [s for s in members if s.error]
        lines = sum(s.lines for s in members)
        nodes = {s.stream.node for s in members if s.stream.node}
        where = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}" if nodes else f"{len(members)} file(s)"
        detail = f"{where}, {lines:,} lines"
        status = "ok"
        if broken:
            status = "unreadable" if len(broken) == len(members) else "partial"
            detail += "; " + "; ".join(f"{s.stream.ref}: {s.error}" for s in broken)
        cut = [s for s in members if s.cut]
        if cut:
            status = "partial" if status == "ok" else status
            detail += "; " + "; ".join(f"{s.stream.ref}: {s.cut:,} over-long line(s) cut" for s in cut)
        out.append({"name": name, "kind": kind, "status": status, "detail": detail})
    with_system = {s.stream.node for s in stats if s.stream.kind == "system" and s.stream.node and not s.error}
    aggregated = any(s.stream.kind == "system" and s.stream.node is None for s in stats)
    lacking = [n for n in attempt.nodes if n not in with_system]
    if lacking and not aggregated:
        status = "missing" if len(lacking) == len(attempt.nodes) else "partial"
        shown = ", ".join(lacking[:5]) + (f" and {len(lacking) - 5} more" if len(lacking) > 5 else "")
        out.append({"name": "system logs", "kind": "system", "status": status, "detail": f"no system log for {shown}"})
    if context.events:
        out.append({"name": "events", "kind": "events", "status": "ok", "detail": f"{len(context.events):,} events"})
    if context.metrics:
        names = len({m.name for m in context.metrics})
        detail = f"{len(context.metrics):,} series of {names} metric{'s' if names != 1 else ''}"
        out.append({"name": "metrics", "kind": "metrics", "status": "ok", "detail": detail})
    if dumps is not None:
        out.append(dumps.source())
    reported = {(r.kind, r.name) for r in context.reports}
    for report in context.reports:
        out.append({"name": report.name, "kind": report.kind, "status": report.status, "detail": report.detail})
    if not context.events and ("events", "events") not in reported:
        out.append({"name": "events", "kind": "events", "status": "missing", "detail": "no scheduler events"})
    if not context.metrics and ("metrics", "metrics") not in reported:
        out.append({"name": "metrics", "kind": "metrics", "status": "missing", "detail": "no metrics"})
    order = {kind: i for i, kind in enumerate(STREAM_KINDS)}
    return sorted(out, key=lambda s: (order.get(s["kind"], len(order)), s["name"], s["status"], s["detail"]))


def to_json(diagnosis: dict) -> str:
    return json.dumps(diagnosis, indent=2, ensure_ascii=False) + "\n"


def _shown(item: dict, field: str = "time") -> str:
    """A time as the text report shows it: ``~`` before one not read from its line, ``?`` when unknown."""
    if item.get(f"{field}_approx"):
        return "~" + (item[field] or "?")
    return item[field] or "?"


def to_text(diagnosis: dict) -> str:
    """A readable terminal report: outcome, root cause, key events in time order, evidence with file:line."""
    attempt = diagnosis["attempt"]
    lines = [f"Attempt {attempt['cluster']}/{attempt['job_id']}#{attempt['attempt']}: {diagnosis['outcome'].upper()}"]
    root = diagnosis["root_cause"]
    if root:
        nodes = ", ".join(root["nodes"]) or "the whole job"
        lines += [
            f"  Root cause  {diagnosis['domain']}/{diagnosis['subdomain']} on {nodes} at {_shown(root)}",
            f"              {root['summary']}  [{root['rule']}]",
        ]
        if root["action"]:
            lines.append(f"  Action      {root['action']}")
    for candidate in diagnosis["candidates"]:
        nodes = ", ".join(candidate["nodes"]) or "the whole job"
        label = "Suggested" if candidate.get("nominated") else "Candidate"
        lines.append(
            f"  {label:<11} {candidate['domain']}/{candidate['subdomain']} on {nodes} at {_shown(candidate)}: "
            f"{candidate['summary']}  [{candidate['rule']}]"
        )
    if diagnosis["outcome"] == "unattributed":
        if diagnosis["candidates"]:
            lines.append(
                "  Not established: only hints (hedged lines, peers other nodes named) suggest the cause above."
            )
        else:
            lines.append("  No cause with enough evidence; the symptoms and sources below are all that is known.")
    if diagnosis["affected_nodes"]:
        lines.append(f"  Affected    {', '.join(diagnosis['affected_nodes'])}")
    if diagnosis["symptoms"]:
        lines.append("Symptoms")
        for symptom in diagnosis["symptoms"]:
            where = ", ".join(symptom["nodes"][:6]) + (" ..." if len(symptom["nodes"]) > 6 else "")
            lines.append(
                f"  {_shown(symptom, 'first'):24} {symptom['role']:8} x{symptom['count']:<5} {symptom['summary']}"
                f" ({where or 'job'})"
            )
    if diagnosis["evidence"]:
        lines.append("Key events")
        for item in sorted(diagnosis["evidence"], key=lambda e: (e["time"] or "~", e["ref"])):
            lines.append(f"  {_shown(item):24} {item['role']:10} {item['node'] or '-':20} {item['ref']}")
            lines.append(f"      {item['text']}")
    lines.append("Sources")
    for source in diagnosis["sources"]:
        lines.append(f"  {source['status']:10} {source['kind']:9} {source['name']}: {source['detail']}")
    ruleset = diagnosis["ruleset"]
    lines.append(f"Rules {ruleset['name']} {ruleset['version']} ({ruleset['digest'][:19]})")
    return "\n".join(lines) + "\n"
