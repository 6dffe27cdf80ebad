"""Load rule files (YAML) into a RuleSet, rejecting anything invalid with the file, line and field.

A rule source is a file or a directory of ``*.yaml`` files; each file holds one or more YAML documents
with the top-level keys ``rules`` (a list), ``settings`` and ``ruleset`` (name, version). The
language is documented in docs/rules.md.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, fields
from pathlib import Path

import re2
import yaml

from engine.flight_recorder.analysis import FindingKind
from engine.flight_recorder.attempt import CAPTURES as FLIGHT_RECORDER_CAPTURES
from engine.ruleset import (
    NODE_MODES,
    ROLES,
    SCOPES,
    SYMPTOM_KINDS,
    AttemptCondition,
    ConvergeCondition,
    CountThreshold,
    Filter,
    FirstCondition,
    FlightRecorderCondition,
    HistoryCondition,
    LabelMatcher,
    Locality,
    MetricCondition,
    Rule,
    RuleSet,
    Selector,
    Settings,
    SilenceCondition,
    StallCondition,
)
from engine.taxonomy import DOMAINS, subdomain_known

LOG_KINDS = ("system", "app", "scheduler", "events")
RULE_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
FILTER_OPS = ("in", "not_in", "equals", "not_equals", "matches", "not_matches", "gt", "gte", "lt", "lte", "same_job")
CONDITION = re.compile(r"^\s*(increase|changes|max|min)\s*(?:(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?))?\s*$")
LABEL = re.compile(r"^(=~|!~|!=|=)?(.*)$", re.S)
MAX_PATTERN_LENGTH = 4096
RE2_MAX_MEM = 8 << 20  # bytes of RE2 program memory per pattern

RULE_FIELDS = {
    "id", "description", "source", "streams", "files", "pattern", "where", "metric", "attempt", "role",
    "kind", "domain", "subdomain", "action", "precedence", "summary", "nodes", "node_from", "tags",
    "explains", "suppresses", "count", "solo", "not_solo", "silence", "stall", "alternatives", "flight_recorder",
    "hint", "corroboration", "local", "converge", "points_at", "first", "history",
}  # fmt: skip
MATCHERS = ("pattern", "metric", "attempt", "silence", "stall", "flight_recorder", "converge", "first", "history")
FINDINGS = tuple(str(kind) for kind in FindingKind)
SELECTOR_FIELDS = {"rules", "tags", "within", "before", "scope"}
SETTINGS_FIELDS = {f.name for f in fields(Settings)}


@dataclass(frozen=True)
class RuleError:
    """One problem in a rule file, located at ``file:line``."""

    file: str
    line: int
    field: str
    reason: str
    rule: str = ""

    def __str__(self) -> str:
        where = f"rule {self.rule!r}, " if self.rule else ""
        return f"{self.file}:{self.line}: {where}field {self.field!r}: {self.reason}"


class RuleSetError(ValueError):
    """A rule set failed to load; ``errors`` lists every problem found, in file and line order."""

    def __init__(self, errors: list[RuleError]):
        self.errors = sorted(errors, key=lambda e: (e.file, e.line, e.field))
        super().__init__("\n".join(str(e) for e in self.errors))


class _Node:
    """A YAML value with the line it starts on (1-based)."""

    __slots__ = ("value", "line")

    def __init__(self, value, line: int):
        self.value = value
        self.line = line


def _convert(node: yaml.Node) -> _Node:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping = {}
        for key_node, value_node in node.value:
            key = _convert(key_node)
            mapping[str(key.value)] = (key.line, _convert(value_node))
        return _Node(mapping, line)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_convert(item) for item in node.value], line)
    return _Node(_SCALARS.construct_object(node, deep=True), line)


_SCALARS = yaml.SafeLoader("")  # used only for its scalar constructors (int, float, bool, null, str)
COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it


def _plain(node: _Node):
    """The plain Python value of a converted node (lines dropped)."""
    if isinstance(node.value, dict):
        return {key: _plain(value) for key, (_, value) in node.value.items()}
    if isinstance(node.value, list):
        return [_plain(item) for item in node.value]
    return node.value


class _Builder:
    def __init__(self):
        self.errors: list[RuleError] = []
        self.rules: list[Rule] = []
        self.settings: dict[str, float | int] = {}
        self.meta: dict[str, str] = {}
        self._pattern_options = re2.Options()
        self._pattern_options.log_errors = False
        self._pattern_options.max_mem = RE2_MAX_MEM

    def error(self, file: str, line: int, field: str, reason: str, rule: str = "") -> None:
        self.errors.append(RuleError(file, line, field, reason, rule))

    def load_text(self, file: str, text: str) -> None:
        try:
            documents = list(yaml.compose_all(text, Loader=COMPOSER))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark else 1
            reason = getattr(exc, "problem", None) or str(exc)
            self.error(file, line, "yaml", f"not valid YAML: {reason}")
            return
        for document in documents:
            if document is None:
                continue
            self.load_document(file, _convert(document))

    def load_document(self, file: str, doc: _Node) -> None:
        if not isinstance(doc.value, dict):
            self.error(file, doc.line, "document", "a rule file is a mapping with a 'rules' list")
            return
        for key, (line, value) in doc.value.items():
            if key == "rules":
                if not isinstance(value.value, list):
                    self.error(file, value.line, "rules", "must be a list of rules")
                    continue
                for item in value.value:
                    self.load_rule(file, item)
            elif key == "settings":
                self.load_settings(file, value)
            elif key == "ruleset":
                self.load_meta(file, value)
            elif key.startswith("x-"):
                continue  # extension keys hold YAML anchors shared by the file's rules
            else:
                self.error(file, line, key, "unknown top-level key (expected rules, settings, ruleset or x-...)")

    def load_meta(self, file: str, node: _Node) -> None:
        if not isinstance(node.value, dict):
            self.error(file, node.line, "ruleset", "must be a mapping with name and version")
            return
        for key, (line, value) in node.value.items():
            if key not in ("name", "version", "description"):
                self.error(file, line, f"ruleset.{key}", "unknown field (expected name, version, description)")
            elif not isinstance(value.value, str | int | float):
                self.error(file, line, f"ruleset.{key}", "must be a string")
            else:
                self.meta[key] = str(value.value)

    def load_settings(self, file: str, node: _Node) -> None:
        if not isinstance(node.value, dict):
            self.error(file, node.line, "settings", "must be a mapping")
            return
        for key, (line, value) in node.value.items():
            if key not in SETTINGS_FIELDS:
                self.error(
                    file, line, f"settings.{key}", f"unknown setting (known: {', '.join(sorted(SETTINGS_FIELDS))})"
                )
                continue
            default = getattr(Settings, key)
            if isinstance(default, int) and not isinstance(default, bool) and not isinstance(default, float):
                if not isinstance(value.value, int) or value.value < 0:
                    self.error(file, line, f"settings.{key}", "must be a non-negative integer")
                    continue
                self.settings[key] = value.value
            else:
                seconds = self.duration(file, value, f"settings.{key}")
                if seconds is not None:
                    self.settings[key] = seconds

    def duration(self, file: str, node: _Node, field: str, rule: str = "") -> float | None:
        value = node.value
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
        match = DURATION.match(value) if isinstance(value, str) else None
        if not match:
            self.error(file, node.line, field, f"{value!r} is not a duration (e.g. 30s, 10m, 2h)", rule)
            return None
        return float(match.group(1)) * UNITS[match.group(2)]

    def load_rule(self, file: str, node: _Node) -> None:
        if not isinstance(node.value, dict):
            self.error(file, node.line, "rule", "each rule is a mapping")
            return
        items = node.value
        rule_id = items.get("id", (node.line, _Node(None, node.line)))[1].value
        rid = rule_id if isinstance(rule_id, str) else ""
        start = len(self.errors)

        def err(name: str, reason: str, line: int | None = None) -> None:
            field_line = line if line is not None else items[name][0] if name in items else node.line
            self.error(file, field_line, name, reason, rid)

        def get(name: str):
            entry = items.get(name)
            return entry[1] if entry else None

        for key, (line, _) in items.items():
            if key not in RULE_FIELDS:
                err(key, "unknown field", line)
        if not isinstance(rule_id, str) or not RULE_ID.match(rule_id):
            err("id", "required: lower-case letters, digits, '.', '_' or '-'")
        description = get("description")
        if description is None or not isinstance(description.value, str) or not description.value.strip():
            err("description", "required: say what the rule recognises")

        role = self.choice(file, get("role"), "role", ROLES, rid, required=True, default_line=node.line)
        kinds, names = self.streams(file, get("streams"), get("files"), rid)
        patterns, compiled = self.patterns(file, get("pattern"), rid)
        hints, hints_compiled = self.patterns(file, get("hint"), rid, "hint")
        corroboration = self.selectors(file, get("corroboration"), "corroboration", rid)
        metric = self.metric(file, get("metric"), rid)
        attempt = self.attempt(file, get("attempt"), rid)
        silence = self.silence(file, get("silence"), rid)
        stall = self.stall(file, get("stall"), rid)
        flight_recorder = self.flight_recorder(file, get("flight_recorder"), rid)
        converge = self.converge(file, get("converge"), rid)
        first = self.first(file, get("first"), rid)
        history = self.history(file, get("history"), rid)
        matchers = [name for name in MATCHERS if get(name) is not None or name == "pattern" and get("hint") is not None]
        if len(matchers) != 1:
            err("pattern", f"a rule needs exactly one of {', '.join(MATCHERS)}" if not matchers else
                f"a rule has one matcher, not {' and '.join(matchers)}")  # fmt: skip
        if metric:
            kinds = frozenset({"metrics"})
        elif attempt or stall or converge or first or history:
            kinds = frozenset({"scheduler"} if attempt else {"app"})
        elif silence:
            kinds = silence.kinds
        elif flight_recorder:
            kinds = frozenset({"traces"})
        elif patterns and not kinds:
            err("streams", "say where the pattern looks: system, app, scheduler or events")
        if hints and role != "cause":
            err("hint", "only causes have hints: a hedged line nominates a cause")
        if corroboration and not hints:
            err("corroboration", "only a rule with hint patterns needs corroboration")
        patterns, compiled = patterns + hints, compiled + hints_compiled
        filters = self.filters(
            file, get("where"), compiled, metric, rid, flight_recorder is not None, any_capture=first is not None
        )

        symptom_kind = None
        if role == "symptom":
            symptom_kind = self.choice(file, get("kind"), "kind", SYMPTOM_KINDS, rid) or "cascade"
        elif get("kind") is not None:
            err("kind", "only symptoms have a kind (cascade or teardown)")
        if role in ("progress", "note") and not patterns:
            err("role", f"a {role} rule matches lines: it needs a pattern")
        domain, subdomain = self.classification(file, items, role, rid)
        alternatives = self.alternatives(file, get("alternatives"), rid)
        if alternatives and role != "cause":
            err("alternatives", "only causes have alternative classifications")
        precedence = 50
        if get("precedence") is not None:
            value = get("precedence").value
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
                err("precedence", "must be an integer from 0 to 100")
            else:
                precedence = value
        nodes = self.choice(file, get("nodes"), "nodes", NODE_MODES, rid) or "node"
        nodes = "node" if nodes == "event" else nodes
        local = self.locality(file, get("local"), compiled, rid)
        if (nodes == "auto") != (local is not None):
            err("local" if local is not None else "nodes", "nodes: auto and local go together: local says when the "
                "cause is its node's rather than the job's")  # fmt: skip
        if nodes != "node" and role != "cause" and get("nodes") is not None:
            err("nodes", "only a cause has a scope (node, job or auto)")
        node_from = self.text(file, get("node_from"), "node_from", rid)
        points_at = self.text(file, get("points_at"), "points_at", rid)
        if points_at and not any(points_at in c.groupindex for c in compiled):
            err("points_at", f"no pattern has a named capture {points_at!r}")
        if (converge or first or history) and role != "cause":
            err("converge" if converge else "first" if first else "history", "it nominates a cause: role: cause")
        if node_from and compiled and not any(node_from in c.groupindex for c in compiled):
            err("node_from", f"no pattern has a named capture {node_from!r}")
        rule_sources = self.strings(file, get("source"), "source", rid)
        tags = self.strings(file, get("tags"), "tags", rid)
        explains = self.selectors(file, get("explains"), "explains", rid)
        suppresses = self.selectors(file, get("suppresses"), "suppresses", rid)
        if role != "cause" and (explains or suppresses):
            err("explains" if explains else "suppresses", "only causes explain or suppress other events")
        solo = self.selectors(file, get("solo"), "solo", rid)
        not_solo = self.selectors(file, get("not_solo"), "not_solo", rid)
        count = self.count(file, get("count"), rid)
        summary = self.text(file, get("summary"), "summary", rid) or ""
        action = self.text(file, get("action"), "action", rid)

        if len(self.errors) > start:
            return
        self.rules.append(
            Rule(
                id=rule_id,
                description=description.value.strip(),
                role=role,
                file=file,
                line=node.line,
                sources=tuple(rule_sources),
                kinds=kinds,
                names=names,
                patterns=patterns,
                compiled=compiled,
                hints=len(hints),
                corroboration=corroboration,
                filters=filters,
                metric=metric,
                attempt=attempt,
                silence=silence,
                stall=stall,
                flight_recorder=flight_recorder,
                converge=converge,
                first=first,
                history=history,
                points_at=points_at,
                symptom_kind=symptom_kind,
                domain=domain,
                subdomain=subdomain,
                alternatives=alternatives,
                action=action,
                precedence=precedence,
                summary=summary,
                nodes=nodes,
                local=local,
                node_from=node_from,
                tags=frozenset(tags),
                explains=explains,
                suppresses=suppresses,
                count=count,
                solo=solo,
                not_solo=not_solo,
                fields={key: line for key, (line, _) in items.items()},
            )
        )

    # -- field readers: each records its own errors and returns None (or an empty value) on failure --

    def text(self, file: str, node: _Node | None, field: str, rule: str) -> str | None:
        if node is None:
            return None
        if not isinstance(node.value, str) or not node.value.strip():
            self.error(file, node.line, field, "must be a non-empty string", rule)
            return None
        return node.value.strip()

    def strings(self, file: str, node: _Node | None, field: str, rule: str) -> list[str]:
        if node is None:
            return []
        values = node.value if isinstance(node.value, list) else [node]
        out = []
        for item in values:
            if not isinstance(item.value, str) or not item.value.strip():
                self.error(file, item.line, field, "must be a string or a list of strings", rule)
            else:
                out.append(item.value.strip())
        return out

    def choice(self, file, node, field, options, rule, required=False, default_line=1) -> str | None:
        if node is None:
            if required:
                self.error(file, default_line, field, f"required: one of {', '.join(options)}", rule)
            return None
        if node.value not in options:
            self.error(file, node.line, field, f"{node.value!r} is not one of {', '.join(options)}", rule)
            return None
        return node.value

    def streams(self, file, node, names_node, rule) -> tuple[frozenset[str], tuple[str, ...]]:
        kinds = set(self.strings(file, node, "streams", rule))
        for kind in sorted(kinds - set(LOG_KINDS)):
            self.error(file, node.line, "streams", f"{kind!r} is not a stream kind ({', '.join(LOG_KINDS)})", rule)
        return frozenset(kinds & set(LOG_KINDS)), tuple(self.strings(file, names_node, "files", rule))

    def patterns(self, file, node, rule, field="pattern") -> tuple[tuple[str, ...], tuple[object, ...]]:
        if node is None:
            return (), ()
        items = node.value if isinstance(node.value, list) else [node]
        texts, compiled = [], []
        for item in items:
            if not isinstance(item.value, str) or not item.value:
                self.error(file, item.line, field, "must be a string or a list of strings", rule)
                continue
            if len(item.value) > MAX_PATTERN_LENGTH:
                self.error(file, item.line, field, f"longer than {MAX_PATTERN_LENGTH} characters", rule)
                continue
            try:
                regex = re2.compile(item.value, self._pattern_options)
            except re2.error as exc:
                reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
                self.error(file, item.line, field, f"not a valid RE2 pattern: {reason}", rule)
                continue
            if regex.search("") is not None:
                self.error(file, item.line, field, "matches an empty line, so it would match every line", rule)
                continue
            texts.append(item.value)
            compiled.append(regex)
        return tuple(texts), tuple(compiled)

    def filters(
        self, file, node, compiled, metric, rule, flight_recorder=False, field="where", any_capture=False
    ) -> tuple[Filter, ...]:
        if node is None:
            return ()
        if not isinstance(node.value, dict):
            self.error(file, node.line, field, "must map capture names to conditions", rule)
            return ()
        captures = set()
        for regex in compiled:
            captures |= set(regex.groupindex)
        out = []
        for name, (line, cond) in node.value.items():
            if compiled and name not in captures and not any_capture:
                self.error(file, line, f"{field}.{name}", "the pattern has no named capture of this name", rule)
                continue
            if flight_recorder and name not in FLIGHT_RECORDER_CAPTURES:
                known = ", ".join(sorted(FLIGHT_RECORDER_CAPTURES))
                self.error(file, line, f"{field}.{name}", f"a flight_recorder finding has no such capture ({known})",
                           rule)  # fmt: skip
                continue
            if metric is None and not compiled and not flight_recorder and not any_capture:
                continue
            if not isinstance(cond.value, dict) or len(cond.value) != 1:
                self.error(
                    file,
                    line,
                    f"{field}.{name}",
                    f"one condition, e.g. {{in: [48, 63]}} ({', '.join(FILTER_OPS)})",
                    rule,
                )
                continue
            op, (op_line, arg) = next(iter(cond.value.items()))
            value = _plain(arg)
            if op not in FILTER_OPS:
                self.error(file, op_line, f"{field}.{name}", f"{op!r} is not one of {', '.join(FILTER_OPS)}", rule)
            elif op in ("in", "not_in") and not (isinstance(value, list) and value):
                self.error(file, op_line, f"{field}.{name}", f"{op} needs a non-empty list", rule)
            elif op in ("gt", "gte", "lt", "lte") and not isinstance(value, int | float):
                self.error(file, op_line, f"{field}.{name}", f"{op} needs a number", rule)
            elif op == "same_job" and not isinstance(value, bool):
                self.error(file, op_line, f"{field}.{name}", "same_job needs true or false", rule)
            elif op in ("matches", "not_matches"):
                try:
                    out.append(Filter(name, op, re2.compile(str(value), self._pattern_options)))
                except re2.error:
                    self.error(file, op_line, f"{field}.{name}", "not a valid RE2 pattern", rule)
            else:
                out.append(Filter(name, op, value))
        return tuple(out)

    def locality(self, file, node, compiled, rule) -> Locality | None:
        """``local: {where: {capture: condition}, context: [selectors], alone: true}``."""
        if node is None:
            return None
        if not isinstance(node.value, dict) or not node.value:
            self.error(file, node.line, "local", "must be a mapping of where and/or alone", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("where", "alone", "context"):
                self.error(file, line, f"local.{key}", "unknown field (where, context, alone)", rule)
        where = node.value.get("where")
        context = node.value.get("context")
        selectors = self.selectors(file, context[1], "local.context", rule) if context else ()
        filters = ()
        if where:  # with context, a context event's captures are read too: any capture name
            filters = self.filters(
                file, where[1], compiled, None, rule, field="local.where", any_capture=bool(selectors)
            )
        alone = node.value.get("alone", (node.line, _Node(False, node.line)))[1]
        if not isinstance(alone.value, bool):
            self.error(file, alone.line, "local.alone", "must be true or false", rule)
            return None
        return Locality(filters, alone.value, selectors)

    def metric(self, file, node, rule) -> MetricCondition | None:
        if node is None:
            return None
        if not isinstance(node.value, dict):
            self.error(file, node.line, "metric", "must be a mapping with series and condition", rule)
            return None
        items = node.value
        for key, (line, _) in items.items():
            if key not in ("series", "labels", "condition"):
                self.error(file, line, f"metric.{key}", "unknown field (series, labels, condition)", rule)
        series = self.text(file, items.get("series", (node.line, _Node(None, node.line)))[1], "metric.series", rule)
        cond_node = items.get("condition", (node.line, _Node("", node.line)))[1]
        match = CONDITION.match(cond_node.value) if isinstance(cond_node.value, str) else None
        if not match:
            self.error(file, cond_node.line, "metric.condition",
                       "e.g. 'increase > 0', 'changes', 'max > 90' or 'min < 1'", rule)  # fmt: skip
            return None
        function, op, threshold = match.group(1), match.group(2), match.group(3)
        if function != "changes" and op is None:
            self.error(file, cond_node.line, "metric.condition", f"{function} needs a comparison, e.g. '> 0'", rule)
            return None
        matchers = []
        labels = items.get("labels")
        if labels is not None:
            if not isinstance(labels[1].value, dict):
                self.error(file, labels[0], "metric.labels", "must map label names to values", rule)
            else:
                for name, (line, value) in labels[1].value.items():
                    m = LABEL.match(str(value.value))
                    op_text, text = m.group(1) or "=", m.group(2)
                    regex = None
                    if op_text in ("=~", "!~"):
                        try:
                            regex = re2.compile(text, self._pattern_options)
                        except re2.error:
                            self.error(file, line, f"metric.labels.{name}", "not a valid RE2 pattern", rule)
                            continue
                    matchers.append(LabelMatcher(name, op_text, text, regex))
        if not series:
            return None
        series_regex = None
        if series.startswith("~"):
            try:
                series_regex = re2.compile(series[1:], self._pattern_options)
            except re2.error:
                self.error(file, items["series"][0], "metric.series", "not a valid RE2 pattern after '~'", rule)
                return None
        return MetricCondition(
            series, tuple(matchers), function, op, float(threshold) if threshold else None, series_regex
        )

    def attempt(self, file, node, rule) -> AttemptCondition | None:
        if node is None:
            return None
        if not isinstance(node.value, dict) or not node.value:
            self.error(file, node.line, "attempt", "must be a mapping of state, exit_code, reason, scheduler", rule)
            return None
        items = node.value
        for key, (line, _) in items.items():
            if key not in ("state", "exit_code", "reason", "scheduler"):
                self.error(file, line, f"attempt.{key}", "unknown field (state, exit_code, reason, scheduler)", rule)
        states = {s.upper() for s in self.strings(file, items.get("state", (0, None))[1], "attempt.state", rule)}
        exit_codes = set(self.strings(file, items.get("exit_code", (0, None))[1], "attempt.exit_code", rule))
        schedulers = set(self.strings(file, items.get("scheduler", (0, None))[1], "attempt.scheduler", rule))
        reason = None
        reason_text = self.text(file, items.get("reason", (0, None))[1], "attempt.reason", rule)
        if reason_text:
            try:
                reason = re2.compile(reason_text, self._pattern_options)
            except re2.error:
                self.error(file, items["reason"][0], "attempt.reason", "not a valid RE2 pattern", rule)
        return AttemptCondition(frozenset(states), frozenset(exit_codes), reason, frozenset(schedulers))

    def silence(self, file, node, rule) -> SilenceCondition | None:
        if node is None:
            return None
        if not isinstance(node.value, dict) or "min_gap" not in node.value:
            self.error(file, node.line, "silence", "must be a mapping with streams and min_gap", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("streams", "min_gap"):
                self.error(file, line, f"silence.{key}", "unknown field (streams, min_gap)", rule)
        streams = node.value.get("streams", (node.line, _Node([_Node("system", node.line)], node.line)))[1]
        kinds = set(self.strings(file, streams, "silence.streams", rule))
        for kind in sorted(kinds - {"system", "app", "scheduler"}):
            self.error(file, node.line, "silence.streams", f"{kind!r} is not a log stream kind", rule)
        gap = self.duration(file, node.value["min_gap"][1], "silence.min_gap", rule)
        return None if gap is None or not kinds else SilenceCondition(frozenset(kinds), gap)

    def stall(self, file, node, rule) -> StallCondition | None:
        if node is None:
            return None
        if not isinstance(node.value, dict) or "progress" not in node.value or "min_gap" not in node.value:
            self.error(file, node.line, "stall", "must be a mapping with progress and min_gap (and cadence)", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("progress", "min_gap", "cadence", "final"):
                self.error(file, line, f"stall.{key}", "unknown field (progress, min_gap, cadence, final)", rule)
        progress = self.selector(file, node.value["progress"][1], "stall.progress", rule)
        final = self.selector(file, node.value["final"][1], "stall.final", rule) if "final" in node.value else None
        gap = self.duration(file, node.value["min_gap"][1], "stall.min_gap", rule)
        cadence = 3.0
        if "cadence" in node.value:
            line, value = node.value["cadence"]
            if not isinstance(value.value, int | float) or isinstance(value.value, bool) or value.value < 0:
                self.error(file, line, "stall.cadence", "must be a number, 0 or more", rule)
                return None
            cadence = float(value.value)
        if progress is None or gap is None or "final" in node.value and final is None:
            return None
        return StallCondition(progress, gap, cadence, final)

    def flight_recorder(self, file, node, rule) -> FlightRecorderCondition | None:
        if node is None:
            return None
        if not isinstance(node.value, dict) or "finding" not in node.value:
            self.error(file, node.line, "flight_recorder", f"must be a mapping with finding ({', '.join(FINDINGS)})",
                       rule)  # fmt: skip
            return None
        for key, (line, _) in node.value.items():
            if key != "finding":
                self.error(file, line, f"flight_recorder.{key}", "unknown field (finding)", rule)
        line, value = node.value["finding"]
        findings = set(self.strings(file, value, "flight_recorder.finding", rule))
        for kind in sorted(findings - set(FINDINGS)):
            self.error(file, line, "flight_recorder.finding", f"{kind!r} is not a finding ({', '.join(FINDINGS)})",
                       rule)  # fmt: skip
        if not findings or findings - set(FINDINGS):
            return None
        return FlightRecorderCondition(frozenset(findings))

    def converge(self, file, node, rule) -> ConvergeCondition | None:
        """``converge: {pointers: {tags: [...]}, reporters: 2}``."""
        if node is None:
            return None
        if not isinstance(node.value, dict) or "pointers" not in node.value:
            self.error(file, node.line, "converge", "must be a mapping with pointers (and reporters)", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("pointers", "reporters"):
                self.error(file, line, f"converge.{key}", "unknown field (pointers, reporters)", rule)
        pointers = self.selector(file, node.value["pointers"][1], "converge.pointers", rule)
        reporters = 2
        if "reporters" in node.value:
            line, value = node.value["reporters"]
            if not isinstance(value.value, int) or isinstance(value.value, bool) or value.value < 1:
                self.error(file, line, "converge.reporters", "must be a positive integer", rule)
                return None
            reporters = value.value
        return None if pointers is None else ConvergeCondition(pointers, reporters)

    def first(self, file, node, rule) -> FirstCondition | None:
        """``first: {events: {rules: [...]}, margin: 60s}``."""
        if node is None:
            return None
        if not isinstance(node.value, dict) or "events" not in node.value:
            self.error(file, node.line, "first", "must be a mapping with events (and margin)", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("events", "margin"):
                self.error(file, line, f"first.{key}", "unknown field (events, margin)", rule)
        events = self.selector(file, node.value["events"][1], "first.events", rule)
        margin = self.duration(file, node.value["margin"][1], "first.margin", rule) if "margin" in node.value else 60.0
        return None if events is None or margin is None else FirstCondition(events, margin)

    def history(self, file, node, rule) -> HistoryCondition | None:
        """``history: {symptoms: {tags: [...]}, domains: [hardware], within: 14d}``."""
        if node is None:
            return None
        if not isinstance(node.value, dict) or "symptoms" not in node.value or "domains" not in node.value:
            self.error(file, node.line, "history", "must be a mapping with symptoms and domains (and within)", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("symptoms", "domains", "within"):
                self.error(file, line, f"history.{key}", "unknown field (symptoms, domains, within)", rule)
        symptoms = self.selector(file, node.value["symptoms"][1], "history.symptoms", rule)
        line, domains_node = node.value["domains"]
        domains = domains_node.value if isinstance(domains_node.value, list) else None
        names = [item.value for item in domains] if domains else []
        known = bool(names) and all(isinstance(name, str) and name in DOMAINS for name in names)
        if not known:
            self.error(file, line, "history.domains", f"must list domains ({', '.join(DOMAINS)})", rule)
        within = 14 * 86400.0
        if "within" in node.value:
            within = self.duration(file, node.value["within"][1], "history.within", rule)
        if symptoms is None or within is None or not known:
            return None
        return HistoryCondition(symptoms, frozenset(names), within)

    def classification(self, file, items, role, rule) -> tuple[str | None, str | None]:
        domain_node = items.get("domain", (None, None))[1]
        subdomain_node = items.get("subdomain", (None, None))[1]
        if role == "cause" and (domain_node is None or subdomain_node is None):
            line = items["id"][0] if "id" in items else 1
            reason = "a cause needs a domain and a subdomain (docs/diagnosis.md, Taxonomy)"
            self.error(file, line, "domain", reason, rule)
            return None, None
        if domain_node is None:
            return None, None
        domain = domain_node.value
        if domain not in DOMAINS:
            self.error(file, domain_node.line, "domain", f"unknown domain {domain!r} ({', '.join(DOMAINS)})", rule)
            return None, None
        if subdomain_node is None:
            return domain, None
        subdomain = subdomain_node.value
        if not isinstance(subdomain, str) or not subdomain_known(domain, subdomain):
            self.error(
                file, subdomain_node.line, "subdomain",
                f"{subdomain!r} is not a subdomain of {domain} ({', '.join(DOMAINS[domain])})", rule,
            )  # fmt: skip
            return domain, None
        return domain, subdomain

    def alternatives(self, file, node, rule) -> tuple[tuple[str, str], ...]:
        """Other classifications a cause's line may equally mean: ``[{domain: ..., subdomain: ...}]``."""
        if node is None:
            return ()
        items = node.value if isinstance(node.value, list) else None
        if not items:
            self.error(file, node.line, "alternatives", "must be a list of {domain, subdomain} mappings", rule)
            return ()
        out = []
        for item in items:
            if not isinstance(item.value, dict) or set(item.value) != {"domain", "subdomain"}:
                self.error(file, item.line, "alternatives", "each alternative is {domain: ..., subdomain: ...}", rule)
                continue
            domain, subdomain = self.classification(file, item.value, "cause", rule)
            if domain and subdomain:
                out.append((domain, subdomain))
        return tuple(out)

    def selectors(self, file, node, field, rule) -> tuple[Selector, ...]:
        if node is None:
            return ()
        items = node.value if isinstance(node.value, list) else [node]
        out = []
        for item in items:
            selector = self.selector(file, item, field, rule)
            if selector:
                out.append(selector)
        return tuple(out)

    def selector(self, file, node, field, rule) -> Selector | None:
        if not isinstance(node.value, dict):
            self.error(file, node.line, field, "must be a mapping of rules/tags, within, before, scope", rule)
            return None
        items = node.value
        for key, (line, _) in items.items():
            if key not in SELECTOR_FIELDS:
                self.error(file, line, f"{field}.{key}", f"unknown field ({', '.join(sorted(SELECTOR_FIELDS))})", rule)
        rules = self.strings(file, items.get("rules", (0, None))[1], f"{field}.rules", rule)
        tags = self.strings(file, items.get("tags", (0, None))[1], f"{field}.tags", rule)
        if not rules and not tags:
            self.error(file, node.line, field, "name the events: rules, tags or both", rule)
            return None
        within = self.duration(file, items["within"][1], f"{field}.within", rule) if "within" in items else 3600.0
        before = self.duration(file, items["before"][1], f"{field}.before", rule) if "before" in items else 60.0
        scope = self.choice(file, items.get("scope", (0, None))[1], f"{field}.scope", SCOPES, rule) or "any"
        if within is None or before is None:
            return None
        return Selector(frozenset(rules), frozenset(tags), within, before, scope)

    def count(self, file, node, rule) -> CountThreshold | None:
        if node is None:
            return None
        if not isinstance(node.value, dict) or not node.value:
            self.error(file, node.line, "count", "must be a mapping of min, nodes, within and scope", rule)
            return None
        for key, (line, _) in node.value.items():
            if key not in ("min", "nodes", "within", "scope"):
                self.error(file, line, f"count.{key}", "unknown field (min, nodes, within, scope)", rule)
        numbers = {}
        for key in ("min", "nodes"):
            value = node.value[key][1].value if key in node.value else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                self.error(file, node.value[key][0], f"count.{key}", "must be a positive integer", rule)
                return None
            numbers[key] = value
        within = (
            self.duration(file, node.value["within"][1], "count.within", rule) if "within" in node.value else 3600.0
        )
        scope = self.choice(file, node.value.get("scope", (0, None))[1], "count.scope", SCOPES, rule) or "node"
        if scope == "node" and numbers["nodes"] > 1:
            self.error(file, node.line, "count.nodes", "distinct nodes need scope: any", rule)
            return None
        return None if within is None else CountThreshold(numbers["min"], within, scope, numbers["nodes"])

    def check_references(self) -> None:
        """Relations must name rules and tags that exist; ids must be unique."""
        seen: dict[str, Rule] = {}
        for rule in self.rules:
            if rule.id in seen:
                first = seen[rule.id]
                self.error(
                    rule.file, rule.line, "id", f"duplicate id (first defined at {first.file}:{first.line})", rule.id
                )
            else:
                seen[rule.id] = rule
        all_tags = set().union(*(rule.tags for rule in self.rules)) if self.rules else set()
        for rule in self.rules:
            for field_name in (
                "explains", "suppresses", "solo", "not_solo", "stall", "corroboration", "converge", "first",
                "history",
            ):  # fmt: skip
                value = getattr(rule, field_name)
                if field_name == "stall":
                    value = (value.progress, *((value.final,) if value and value.final else ())) if value else ()
                elif field_name == "converge":
                    value = (value.pointers,) if value else ()
                elif field_name == "first":
                    value = (value.events,) if value else ()
                elif field_name == "history":
                    value = (value.symptoms,) if value else ()
                selectors = value
                line = rule.fields.get(field_name, rule.line)
                for selector in selectors:
                    for name in sorted(selector.rules - set(seen)):
                        self.error(rule.file, line, field_name, f"unknown rule {name!r}", rule.id)
                    for tag in sorted(selector.tags - all_tags):
                        self.error(rule.file, line, field_name, f"no rule has the tag {tag!r}", rule.id)


def parse_ruleset(sources: list[tuple[str, str]], *, name: str = "", version: str = "") -> RuleSet:
    """Build a RuleSet from (file name, text) pairs. Raises RuleSetError listing every problem."""
    builder = _Builder()
    digest = hashlib.sha256()
    for file, text in sorted(sources):
        digest.update(file.encode() + b"\0" + text.encode() + b"\0")
        builder.load_text(file, text)
    builder.check_references()
    if builder.errors:
        raise RuleSetError(builder.errors)
    if not builder.rules:
        raise RuleSetError(
            [RuleError(sources[0][0] if sources else "<rules>", 1, "rules", "the rule set has no rules")]
        )
    return RuleSet(
        name=builder.meta.get("name") or name or "rules",
        version=builder.meta.get("version") or version or "local",
        digest="sha256:" + digest.hexdigest(),
        rules=tuple(sorted(builder.rules, key=lambda r: r.id)),
        settings=Settings(**builder.settings),
    )


def read_rule_files(path: str | Path) -> list[tuple[str, str]]:
    """The (file name, text) pairs of a rule file or a directory of ``*.yaml`` / ``*.yml`` files."""
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise RuleSetError([RuleError(str(root), 1, "rules", "no .yaml rule files in this directory")])
        return [(str(p.relative_to(root.parent)), _read(p)) for p in files]
    if not root.is_file():
        raise RuleSetError([RuleError(str(root), 1, "rules", "no such rule file or directory")])
    return [(root.name, _read(root))]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RuleSetError([RuleError(str(path), 1, "file", f"not UTF-8 text ({exc.reason})")]) from None


def load_rules(path: str | Path) -> RuleSet:
    """Load the rule file or directory at ``path``."""
    root = Path(path)
    return parse_ruleset(read_rule_files(root), name=root.stem if root.is_file() else root.name)
