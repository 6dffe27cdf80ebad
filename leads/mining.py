"""Mine an attempt's log templates: find the lines with error-like wording, mask them and group them with Drain.

One multi-pattern scan per block of each log stream (Hyperscan, about the engine's prefilter speed; Python's ``re``
where Hyperscan is missing) finds the lines whose words may show a failure (``leads.wording``); only those are
decoded, split by the engine's normaliser (rank prefix, time, host, message), masked (``leads.masking``) and
grouped into templates by Drain (Drain3 from PyPI: He et al., "Drain: An Online Log Parsing Approach with Fixed
Depth Tree", ICWS 2017), a fresh tree per attempt, fed in the bundle's order, so the same bundle always gives the
same templates. A template's id is a digest of its text: the same wording in two attempts is the same template.

Each template keeps how many lines it has, how many of them are known to be normal (printed at an informational
level, matched by a rule as context, progress or teardown, of an attempt that succeeded, or of an attempt the rules
attributed: its failure is known to be another line's), the nodes it was seen on and its first line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from drain3.drain import Drain

from engine.context import AttemptContext, LogStream
from engine.events import Event
from engine.normalise import Clock, parse_line
from leads.masking import Masker
from leads.wording import PREFILTER, informational, wording

try:
    import hyperscan
except ImportError:  # pragma: no cover - only where the wheel does not install; the engine does the same
    hyperscan = None

BLOCK_BYTES = 8 << 20
LINE_CHARS = 1000  # a longer line is cut here before it is masked and shown
LINES_PER_STREAM = 20_000  # candidate lines read per stream; further ones are not mined
SUCCEEDED = frozenset({"COMPLETED", "Succeeded", "Complete", "SUCCEEDED"})
NORMAL_ROLES = frozenset({"context", "progress", "teardown"})
DRAIN_SIMILARITY = 0.4  # Drain3's default: a line joins a template when at least 40% of its words match
DRAIN_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Line:
    """One log line: where it is (``file``, its 1-based ``line``), its stream and node, its time when it has one."""

    file: str
    line: int
    stream: str
    kind: str
    node: str | None
    time: float | None
    text: str
    message: str

    def key(self) -> tuple:
        return (self.time if self.time is not None else float("inf"), self.file, self.line)


@dataclass(slots=True)
class Template:
    """The lines of one template in one attempt."""

    key: str
    text: str
    lines: int = 0
    normal: int = 0
    informational: int = 0  # lines printed at an informational level
    nodes: set = field(default_factory=set)
    first: Line | None = None
    weight: float = 0.0
    word: str = ""
    explained: bool = False  # a rule matched one of its lines


@dataclass(frozen=True)
class Mined:
    templates: dict[str, Template]  # by key, in the order first seen
    nodes: int  # the attempt's nodes
    first_symptom: float | None  # the earliest time of a line with error-like wording (weight 0.7 or more)
    places: dict[tuple[str, int], str]  # the template key of each mined line, by (file, line)


def template_key(text: str) -> str:
    """A template's stable id: the first 16 hex digits of the SHA-256 of its text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Explained:
    """The lines the rules matched (the analysis's events), and which of them are known to be normal."""

    def __init__(self, events: Iterable[Event] = ()):
        self.places: dict[tuple[str, int], bool] = {}
        self.texts: dict[str, bool] = {}
        for event in events:
            if event.kind not in ("metrics", "events"):
                normal = (event.role or event.rule.role) in NORMAL_ROLES or event.rule.role in NORMAL_ROLES
                self.add(event.ref, event.text, normal)

    @classmethod
    def of(cls, lines: Iterable[tuple[str, str, bool]]) -> Explained:
        """From (ref ``file:line``, text, whether normal) of each line a rule matched (stored node events)."""
        explained = cls()
        for ref, text, normal in lines:
            explained.add(ref, text, normal)
        return explained

    def add(self, ref: str, text: str, normal: bool) -> None:
        path, _, number = ref.rpartition(":")
        if path and number.isdigit():
            self.places[(path, int(number))] = normal
            self.texts[text] = normal

    def get(self, line: Line) -> bool | None:
        """None when no rule matched the line, else whether the rule calls it normal."""
        found = self.places.get((line.file, line.line))
        return self.texts.get(line.text) if found is None else found


def mine(context: AttemptContext, explained: Explained | None = None, *, settled: bool = False) -> Mined:
    """The templates of the attempt's lines with error-like wording; ``settled``: the rules attributed the attempt,
    so its lines are background (known not to be its failure's) and count as normal.

    Lines that differ only in their digits are masked and weighed once (the first of them; a cache), and Drain sees
    each distinct masked text once (a repeated line changes no template)."""
    explained = explained or Explained()
    attempt = context.attempt
    masker = Masker(attempt.nodes)
    drain = Drain(sim_th=DRAIN_SIMILARITY, depth=DRAIN_DEPTH)
    succeeded = attempt.state in SUCCEEDED
    seen: dict[str, tuple[str, float, str, bool]] = {}  # by message with hosts masked and digits zeroed
    clusters: dict[str, int] = {}  # Drain's cluster of each masked text
    placed: list[tuple[Line, int, bool | None, float, str, bool]] = []
    for line in candidate_lines(context):
        key = masker.mask_hosts(line.message).translate(_ZERO)
        known = seen.get(key)
        if known is None:
            known = seen[key] = (masker.mask_rest(key), *wording(line.message), informational(line.text))
        masked, weight, word, info = known
        cluster_id = clusters.get(masked)
        if cluster_id is None:
            cluster_id = clusters[masked] = drain.add_log_message(masked)[0].cluster_id
        placed.append((line, cluster_id, explained.get(line), weight, word, info))
    texts = {cluster.cluster_id: cluster.get_template() for cluster in drain.clusters}
    templates: dict[str, Template] = {}
    first_symptom = None
    places = {}
    for line, cluster_id, matched, weight, word, info in placed:
        text = texts[cluster_id]
        key = places[(line.file, line.line)] = template_key(text)
        template = templates.get(key)
        if template is None:
            template = templates[key] = Template(key=key, text=text)
        template.lines += 1
        template.informational += info
        if succeeded or settled or matched or info:
            template.normal += 1
        if matched is not None:
            template.explained = True
        if line.node is not None:
            template.nodes.add(line.node)
        if template.first is None or line.key() < template.first.key():
            template.first = line
        if weight > template.weight:
            template.weight, template.word = weight, word
        if weight >= 0.7 and line.time is not None and (first_symptom is None or line.time < first_symptom):
            first_symptom = line.time
    return Mined(templates, len(attempt.nodes), first_symptom, places)


_ZERO = str.maketrans("123456789", "000000000")


def candidate_lines(context: AttemptContext) -> Iterator[Line]:
    """The lines with error-like wording of every log stream, stream by stream in the bundle's order."""
    attempt = context.attempt
    clock = Clock(attempt.timezone, attempt.start, attempt.end)
    nodes = {name: name for name in attempt.nodes}
    nodes.update({name.split(".", 1)[0]: name for name in attempt.nodes if "." in name})
    for stream in context.streams:
        yield from _stream_lines(stream, clock, nodes, attempt.ranks)


def _stream_lines(stream: LogStream, clock: Clock, nodes: dict, ranks) -> Iterator[Line]:
    system = stream.kind == "system"
    known = nodes.__contains__
    found = 0
    number = 0  # lines before ``previous`` in the block
    with stream.opener() as handle:
        rest = None  # the previous block and where its lines were counted to: counted only if a block follows
        for block in _blocks(handle):
            if rest is not None:
                number += rest[0].count(b"\n", rest[1])
            previous = 0
            for start in _matching_starts(block):
                number += block.count(b"\n", previous, start)
                previous = start
                end = block.find(b"\n", start)
                raw = block[start : end if end != -1 else len(block)]
                text = raw[: LINE_CHARS * 4].decode("utf-8", "replace").rstrip("\r")[:LINE_CHARS]
                parsed = parse_line(text, clock, system, known)
                host = nodes.get(parsed.host) or nodes.get((parsed.host or "").split(".", 1)[0])
                node = stream.node or host or (ranks.get(parsed.rank) if parsed.rank is not None else None)
                yield Line(stream.ref, number + 1, stream.name, stream.kind, node, parsed.time, text, parsed.message)
                found += 1
                if found >= LINES_PER_STREAM:
                    return
            rest = (block, previous)


def _blocks(handle) -> Iterator[bytes]:
    """Blocks of whole lines (the last one may lack its newline)."""
    carry = b""
    while data := handle.read(BLOCK_BYTES):
        block = carry + data
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            carry = block
            continue
        carry = block[cut:]
        yield block[:cut]
    if carry:
        yield carry


if hyperscan is not None:
    _DATABASE = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    _DATABASE.compile(
        expressions=[pattern.encode() for pattern in PREFILTER],
        ids=list(range(len(PREFILTER))),
        flags=[hyperscan.HS_FLAG_CASELESS] * len(PREFILTER),
    )

    def _matching_starts(block: bytes) -> list[int]:
        """The start offsets of the block's lines with a match, in order (a scratch space per scan: threads)."""
        ends: list[int] = []
        _DATABASE.scan(
            block,
            match_event_handler=lambda _id, _from, to, _flags, _context: ends.append(to),
            scratch=hyperscan.Scratch(_DATABASE),
        )
        return sorted({block.rfind(b"\n", 0, max(to - 1, 0)) + 1 for to in ends})

else:  # pragma: no cover
    _ANY = re.compile("|".join(f"(?:{pattern})" for pattern in PREFILTER).encode(), re.IGNORECASE | re.MULTILINE)

    def _matching_starts(block: bytes) -> list[int]:
        return sorted({block.rfind(b"\n", 0, match.start()) + 1 for match in _ANY.finditer(block)})
