"""Normalise one log line: rank prefixes, timestamp, host and the message the rules match.

Timestamps come in the forms real systems print (docs/bundles.md): ISO 8601 (journal
short-iso, Python logging, Slurm, Ray), classic syslog without a year, ``dmesg -T``, ``dmesg -H``
(a minute stamp ``[Nov 2 10:14]`` then stamps relative to the previous line, ``[  +0.000844]``),
``dmesg -d`` deltas, kernel uptime only, epoch seconds in brackets (UCX), glog
(``E1102 10:15:01.123456``), ``I 05-04 00:52:46`` and a bare time of day (``[15:58:29]``, rich).
Times without a zone are in the attempt's time zone; times without a year (or a date) take the year
(or day) that puts them nearest the attempt's window. Kernel uptime is resolved later, once the
stream's boot anchors are known (``BootClock``); relative stamps and lines with no stamp are placed
later too, from their neighbours (``engine.timing``).

Hosts come from a system line's host field or from the prefixes workload output carries: NCCL's
``host:pid:tid [dev]``, UCX's ``[host:pid:tid]``, Ray's ``(... ip=host)``, ``srun: error: host:``,
and a bare ``host: `` (DeepSpeed, pdsh), which counts only when it names a node of the attempt.
Redacted names (``...-48``) are names too.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}

# Prefixes that place a line of workload output on a rank: srun --label "12: ", torchrun's
# "[default3]:" (local rank), PyTorch's "[rank12]:" (global rank), Lightning's "[rank: 0] " and Open MPI's
# mpirun --tag-output "[1,12]<stdout>:" (job, global rank), in any combination, before or after the line's stamp.
PREFIX = re.compile(
    r"^(?:(\d{1,6}): |\[default(\d{1,6})\]:|\[rank:? ?(\d{1,6})\]:?|\[\d{1,9},(\d{1,6})\]<std(?:out|err|diag)>:)\s?"
)
# Ray's prefix on forwarded worker output: "(raylet) ", "(pid=4242) ", "(WorkerDict pid=4242, ip=10.0.0.2) ".
RAY_PREFIX = re.compile(r"^\((?:[A-Za-z_][\w.:-]*)?(?:,? ?pid=\d+)?(?:,? ?ip=(?P<ip>[\w.:-]+))?\) ")
ISO = re.compile(
    r"^\[?(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\s?(Z|[+-]\d\d:?\d\d)?\]?:?(?: |$)"
)
SYSLOG = re.compile(r"^([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))? ")
# dmesg -T, and dmesg -T -d with the delta to the previous line after the time.
DMESG_T = re.compile(
    r"^\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})(?: <\s*[\d.]+>)?\]\s?"
)
# dmesg -H / --reltime: "[Nov 2 10:14]" (strftime "%b%e %H:%M") when the minute changes, else the delta
# to the previous line, "[  +0.000844]" (util-linux sys-utils/dmesg.c, print_record).
DMESG_MINUTE = re.compile(r"^\[([A-Z][a-z]{2}) ?(\d{1,2}) (\d\d):(\d\d)\]\s?")
DMESG_RELATIVE = re.compile(r"^\[\s*\+(\d{1,9})\.(\d{6})\]\s?")
DMESG_DELTA = re.compile(r"^\[<\s*(\d{1,9})\.(\d{6})>\]\s?")  # dmesg -d --notime
# Kernel uptime (optionally with dmesg -d's delta); ten digits or more before the point is epoch seconds.
UPTIME = re.compile(r"^\[\s*(\d{1,10})\.(\d{1,9})(?: <\s*[\d.]+>)?\]\s?")
EPOCH_FLOOR = 1_000_000_000  # 2001-09-09: no kernel has been up this long
GLOG = re.compile(r"^\[?([IWEF])(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b")
LEVEL_MONTH_DAY = re.compile(r"^\[?([IWEFD]) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\]? ")  # vLLM, SkyPilot
TIME_OF_DAY = re.compile(r"^\[(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\] ")  # rich's log column
EMBEDDED = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?")
SYSLOG_PRIORITY = re.compile(r"^<\d{1,3}>(?:1 )?")  # a raw syslog (RFC 3164/5424) line's <PRI> and version
CRI_STREAM = re.compile(r"^(?:stdout|stderr) [FP] ")  # a container runtime log's stream and tag, after the time
HOST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]{0,252}) (?=[\w./@()-]+(?:\[\d+\])?: )")
# Host names as workload prefixes print them; a redacted name ("...-48", "***-07") is a name too.
NAME = r"[A-Za-z0-9.*][A-Za-z0-9_.*-]{0,252}"
NCCL_HOST = re.compile(rf"^({NAME}):\d+:\d+ \[\d+\] ")  # "dgx-0473:2814086:2814172 [6] NCCL WARN ..."
UCX_HOST = re.compile(rf"^\[({NAME}):\d+:\d+(?::\d+)?\] ")  # "[cgpu12:56309:2:56362] Caught signal 11 ..."
SRUN_HOST = re.compile(rf"^srun: error: ({NAME}): tasks? [\d,-]+: ")
BARE_HOST = re.compile(rf"^({NAME}): ")  # DeepSpeed/pdsh; only a node of the attempt counts
EMBED_WINDOW = 200
DAY = 86400.0


@dataclass(frozen=True, slots=True)
class Parsed:
    time: float | None  # unix seconds, when the line carries a wall-clock time
    uptime: float | None  # kernel uptime seconds, when that is all the line carries
    host: str | None
    rank: int | None
    message: str
    span: float = 0.0  # the stamp's resolution: the time lies in [time, time + span] (60 for "[Nov 2 10:14]")
    delta: float | None = None  # seconds since the stream's previous line (dmesg -H / -d), when that is all


class Clock:
    """Turns the fields of a timestamp into unix seconds for one attempt."""

    def __init__(self, zone: str, start: datetime, end: datetime):
        self.zone = ZoneInfo(zone)
        self.start = start.timestamp()
        self.end = end.timestamp()
        local_end = end.astimezone(self.zone)
        self.years = (local_end.year, local_end.year - 1, local_end.year + 1)
        first = start.astimezone(self.zone).date()
        days = (local_end.date() - first).days
        self.days = [first + timedelta(days=offset) for offset in range(-1, min(days, 400) + 2)]

    def at(self, year, month, day, hour, minute, second, fraction=None, offset=None) -> float | None:
        if offset:
            tz = UTC if offset in ("Z", "z") else _offset(offset)
            if tz is None:
                return None
        else:
            tz = self.zone
        try:
            moment = datetime(year, month, day, hour, minute, second, tzinfo=tz)
        except ValueError:
            return None
        return moment.timestamp() + (_fraction(fraction) if fraction else 0.0)

    def yearless(self, month, day, hour, minute, second, fraction=None) -> float | None:
        """The time in the year that puts it nearest the attempt's window."""
        return self._nearest(self.at(year, month, day, hour, minute, second, fraction) for year in self.years)

    def dateless(self, hour, minute, second, fraction=None) -> float | None:
        """A bare time of day: the one day that puts it inside (or nearest) the attempt's window; None when
        the window holds it on several days (the day cannot be told)."""
        values = [self.at(d.year, d.month, d.day, hour, minute, second, fraction) for d in self.days]
        inside = [v for v in values if v is not None and self.start <= v <= self.end]
        if len(inside) > 1:
            return None
        return inside[0] if inside else self._nearest(values)

    def _nearest(self, values) -> float | None:
        best = None
        for value in values:
            if value is None:
                continue
            distance = max(self.start - value, value - self.end, 0.0)
            if best is None or distance < best[0]:
                best = (distance, value)
        return best[1] if best else None


def _fraction(digits: str) -> float:
    return int(digits) / 10 ** len(digits)


def _offset(text: str) -> timezone | None:
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        return None
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_line(line: str, clock: Clock, system: bool, known: Callable[[str], bool] | None = None) -> Parsed:
    """Split a line into its rank, time, host and message. ``system`` lines may carry a host field;
    ``known`` says whether a name is a node of the attempt (a bare ``name: `` prefix counts only then)."""
    rank, prefix_host, rest = _prefixes(line, system, known)
    time = uptime = delta = None
    span = 0.0
    host = None
    if system and (match := SYSLOG_PRIORITY.match(rest)):
        rest = rest[match.end() :]
    if match := ISO.match(rest):
        y, mo, d, h, mi, s, frac, off = match.groups()
        time = clock.at(int(y), int(mo), int(d), int(h), int(mi), int(s), frac, off)
        rest = rest[match.end() :]
        if match := CRI_STREAM.match(rest):
            rest = rest[match.end() :]
        if not system and rest.startswith("["):  # a rank prefix after the stamp (mpirun --timestamp-output)
            later_rank, later_host, rest = _prefixes(rest, system, known)
            rank = later_rank if rank is None else rank
            prefix_host = prefix_host or later_host
    elif match := SYSLOG.match(rest):
        month = MONTHS.get(match.group(1))
        if month:
            h, mi, s = (int(match.group(i)) for i in (3, 4, 5))
            time = clock.yearless(month, int(match.group(2)), h, mi, s, match.group(6))
            rest = rest[match.end() :]
    elif match := DMESG_T.match(rest):
        month = MONTHS.get(match.group(1))
        if month:
            d, h, mi, s, y = (int(match.group(i)) for i in (2, 3, 4, 5, 6))
            time = clock.at(y, month, d, h, mi, s)
            rest = rest[match.end() :]
    elif match := DMESG_MINUTE.match(rest):
        month = MONTHS.get(match.group(1))
        if month:
            time = clock.yearless(month, int(match.group(2)), int(match.group(3)), int(match.group(4)), 0)
            span = 60.0
            rest = rest[match.end() :]
    elif match := DMESG_RELATIVE.match(rest) or DMESG_DELTA.match(rest):
        delta = int(match.group(1)) + _fraction(match.group(2))
        rest = rest[match.end() :]
    elif match := UPTIME.match(rest):
        value = int(match.group(1)) + _fraction(match.group(2))
        if int(match.group(1)) >= EPOCH_FLOOR:
            time = value
        else:
            uptime = value
        rest = rest[match.end() :]
    elif match := GLOG.match(rest):
        mo, d, h, mi, s = (int(match.group(i)) for i in (2, 3, 4, 5, 6))
        time = clock.yearless(mo, d, h, mi, s, match.group(7))
    elif match := LEVEL_MONTH_DAY.match(rest):
        mo, d, h, mi, s = (int(match.group(i)) for i in (2, 3, 4, 5, 6))
        time = clock.yearless(mo, d, h, mi, s, match.group(7))
        rest = rest[match.end() :]
    elif match := TIME_OF_DAY.match(rest):
        h, mi, s = (int(match.group(i)) for i in (1, 2, 3))
        time = clock.dateless(h, mi, s, match.group(4)) if h < 24 and mi < 60 and s < 60 else None
        rest = rest[match.end() :]
    if time is None and uptime is None and delta is None and (match := EMBEDDED.search(rest, 0, EMBED_WINDOW)):
        y, mo, d, h, mi, s, frac, off = match.groups()
        time = clock.at(int(y), int(mo), int(d), int(h), int(mi), int(s), frac, off)
    if system:
        if time is not None and (match := HOST.match(rest)):
            host = match.group(1)
            rest = rest[match.end() :]
    elif match := NCCL_HOST.match(rest) or UCX_HOST.match(rest) or SRUN_HOST.match(rest):
        host = match.group(1)
    else:
        host = prefix_host
    return Parsed(time, uptime, host, rank, rest, span, delta)


def line_rank(line: str, system: bool, known: Callable[[str], bool] | None = None) -> int | None:
    """The rank ``parse_line`` gives ``line``, from its workload prefixes alone (a fraction of its cost)."""
    return _prefixes(line, system, known)[0]


# A raw line that starts with one "[rankN]: " prefix and nothing ``_prefixes`` would read on: its rank is N, read from
# the bytes without decoding them. After the prefix come ASCII name characters not followed by ":" or by a non-ASCII
# character (so no "host: " or "N: " prefix follows), or no name character and no "[", "(" or non-ASCII character
# (so no other prefix starts there). Any other line: no match, ``line_rank`` decides.
RAW_RANK = re.compile(
    rb"\[rank:? ?(\d{1,6})\]:? (?:[A-Za-z0-9_.*-]+(?![A-Za-z0-9_.*:\x80-\xff-])|(?![A-Za-z0-9_.*(\[\x80-\xff-]))"
)


def _prefixes(line: str, system: bool, known: Callable[[str], bool] | None) -> tuple[int | None, str | None, str]:
    """The rank and host a line's workload prefixes give, and the rest of the line."""
    rank = None
    rest = line
    prefix_host = None
    while True:
        if match := PREFIX.match(rest):
            label, _local, global_rank, mpi_rank = match.groups()
            if global_rank is not None or mpi_rank is not None:
                rank = int(global_rank if global_rank is not None else mpi_rank)
            elif label is not None and rank is None:
                rank = int(label)
        elif system:
            break
        elif match := RAY_PREFIX.match(rest):
            prefix_host = match.group("ip") or prefix_host
        elif known is not None and (match := BARE_HOST.match(rest)) and known(match.group(1)):
            prefix_host = match.group(1)
        else:
            break
        rest = rest[match.end() :]
    return rank, prefix_host, rest


# Lines that tie kernel uptime to the wall clock: the RTC read at boot and audit records.
RTC_ANCHOR = re.compile(r"^\[\s*(\d+)\.(\d+)\].*setting system clock to .*\((\d{9,11})\)")
AUDIT_ANCHOR = re.compile(r"^\[\s*(\d+)\.(\d+)\].*audit\((\d{9,11})(?:\.(\d+))?:\d+\)")
BOOT_START = re.compile(r"^\[\s*0\.0+\] Linux version ")


class BootClock:
    """Resolves kernel uptime to wall-clock time from the anchors found in one stream.

    Each boot (a line at uptime 0) starts a segment; a line takes the first anchor of its segment. An
    anchor read from the stream itself (the RTC, an audit record) is exact; one found in another stream
    (``bound``: a process the kernel killed, seen gone by its supervisor) bounds the boot time between two
    wall-clock times.
    """

    def __init__(self):
        self.boots: list[int] = [0]  # line numbers where a boot starts
        self.anchors: dict[int, tuple[float, float]] = {}  # boot segment index -> boot time bounds (unix seconds)
        self.read: set[int] = set()  # segments anchored by a line of the stream itself (exact)
        self.contradicted: set[int] = set()  # segments whose cross-stream bounds disagree

    def see(self, line_no: int, line: str) -> None:
        if BOOT_START.match(line):
            if line_no > self.boots[-1]:
                self.boots.append(line_no)
            return
        match = RTC_ANCHOR.match(line) or AUDIT_ANCHOR.match(line)
        if match:
            uptime = int(match.group(1)) + _fraction(match.group(2))
            wall = int(match.group(3)) + (_fraction(match.group(4)) if match.lastindex >= 4 and match.group(4) else 0)
            segment = self.segment(line_no)
            if segment not in self.read:
                self.read.add(segment)
                self.anchors[segment] = (wall - uptime, wall - uptime)

    def segment(self, line_no: int) -> int:
        return bisect.bisect_right(self.boots, line_no) - 1

    def resolve(self, line_no: int, uptime: float, *, high: bool = False) -> float | None:
        """Wall-clock time of ``uptime`` on line ``line_no``: the earliest it can be, or with ``high`` the latest."""
        boot = self.anchors.get(self.segment(line_no))
        return None if boot is None else boot[high] + uptime

    def exact(self, line_no: int) -> bool:
        return self.segment(line_no) in self.read

    def bound(self, line_no: int, uptime: float, low: float, high: float) -> bool:
        """Line ``line_no`` at ``uptime`` happened between wall-clock ``low`` and ``high``: bound its boot's time
        by that, narrowing an earlier bound of the same boot. An anchor read from the stream is kept; bounds that
        contradict each other leave the boot unanchored (nothing is invented). Returns whether the bound was taken."""
        segment = self.segment(line_no)
        if segment in self.contradicted or segment in self.read:
            return False
        known = self.anchors.get(segment, (float("-inf"), float("inf")))
        boot = (max(known[0], low - uptime), min(known[1], high - uptime))
        if boot[0] > boot[1]:
            self.anchors.pop(segment, None)
            self.contradicted.add(segment)
            return False
        self.anchors[segment] = boot
        return True
