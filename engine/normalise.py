"""Normalise one log line: rank prefixes, timestamp, host and the message the rules match.

Timestamps come in the forms real systems print (CONTRACTS.md section 1): ISO 8601 (journal
short-iso, Python logging, Slurm), classic syslog without a year, ``dmesg -T``, kernel uptime only,
and glog (``E1102 10:15:01.123456``). Times without a zone are in the attempt's time zone; times
without a year take the year that puts them nearest the attempt's window. Kernel uptime is resolved
later, once the stream's boot anchors are known (``BootClock``).
"""

from __future__ import annotations

import bisect
import re
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
# "[default3]:" (local rank) and PyTorch's "[rank12]:" (global rank), in any combination.
PREFIX = re.compile(r"^(?:(\d{1,6}): |\[default(\d{1,6})\]:|\[rank(\d{1,6})\]:)\s?")
ISO = re.compile(
    r"^\[?(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\s?(Z|[+-]\d\d:?\d\d)?\]?(?: |$)"
)
SYSLOG = re.compile(r"^([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))? ")
DMESG_T = re.compile(r"^\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]\s?")
UPTIME = re.compile(r"^\[\s*(\d{1,10})\.(\d{1,9})\]\s?")
GLOG = re.compile(r"^\[?([IWEF])(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b")
EMBEDDED = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?")
SYSLOG_PRIORITY = re.compile(r"^<\d{1,3}>(?:1 )?")  # a raw syslog (RFC 3164/5424) line's <PRI> and version
CRI_STREAM = re.compile(r"^(?:stdout|stderr) [FP] ")  # a container runtime log's stream and tag, after the time
HOST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]{0,252}) (?=[\w./@()-]+(?:\[\d+\])?: )")
# The NCCL log prefix names the host: "dgx-0473:2814086:2814172 [6] NCCL WARN ..."
NCCL_HOST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]{0,252}):\d+:\d+ \[\d+\] ")
EMBED_WINDOW = 200


@dataclass(frozen=True, slots=True)
class Parsed:
    time: float | None  # unix seconds, when the line carries a wall-clock time
    uptime: float | None  # kernel uptime seconds, when that is all the line carries
    host: str | None
    rank: int | None
    message: str


class Clock:
    """Turns the fields of a timestamp into unix seconds for one attempt."""

    def __init__(self, zone: str, start: datetime, end: datetime):
        self.zone = ZoneInfo(zone)
        self.start = start.timestamp()
        self.end = end.timestamp()
        local_end = end.astimezone(self.zone)
        self.years = (local_end.year, local_end.year - 1, local_end.year + 1)

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
        best = None
        for year in self.years:
            value = self.at(year, month, day, hour, minute, second, fraction)
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


def parse_line(line: str, clock: Clock, system: bool) -> Parsed:
    """Split a line into its rank, time, host and message. ``system`` lines may carry a host field."""
    rank = None
    rest = line
    while True:
        match = PREFIX.match(rest)
        if not match:
            break
        label, _local, global_rank = match.groups()
        if global_rank is not None:
            rank = int(global_rank)
        elif label is not None and rank is None:
            rank = int(label)
        rest = rest[match.end() :]
    time = uptime = None
    host = None
    if system and (match := SYSLOG_PRIORITY.match(rest)):
        rest = rest[match.end() :]
    if match := ISO.match(rest):
        y, mo, d, h, mi, s, frac, off = match.groups()
        time = clock.at(int(y), int(mo), int(d), int(h), int(mi), int(s), frac, off)
        rest = rest[match.end() :]
        if match := CRI_STREAM.match(rest):
            rest = rest[match.end() :]
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
    elif match := UPTIME.match(rest):
        uptime = int(match.group(1)) + _fraction(match.group(2))
        rest = rest[match.end() :]
    elif match := GLOG.match(rest):
        mo, d, h, mi, s = (int(match.group(i)) for i in (2, 3, 4, 5, 6))
        time = clock.yearless(mo, d, h, mi, s, match.group(7))
    if time is None and uptime is None and (match := EMBEDDED.search(rest, 0, EMBED_WINDOW)):
        y, mo, d, h, mi, s, frac, off = match.groups()
        time = clock.at(int(y), int(mo), int(d), int(h), int(mi), int(s), frac, off)
    if system and time is not None and (match := HOST.match(rest)):
        host = match.group(1)
        rest = rest[match.end() :]
    elif match := NCCL_HOST.match(rest):
        host = match.group(1)
    return Parsed(time, uptime, host, rank, rest)


# Lines that tie kernel uptime to the wall clock: the RTC read at boot and audit records.
RTC_ANCHOR = re.compile(r"^\[\s*(\d+)\.(\d+)\].*setting system clock to .*\((\d{9,11})\)")
AUDIT_ANCHOR = re.compile(r"^\[\s*(\d+)\.(\d+)\].*audit\((\d{9,11})(?:\.(\d+))?:\d+\)")
BOOT_START = re.compile(r"^\[\s*0\.0+\] Linux version ")


class BootClock:
    """Resolves kernel uptime to wall-clock time from the anchors found in one stream.

    Each boot (a line at uptime 0) starts a segment; a line takes the first anchor of its segment.
    """

    def __init__(self):
        self.boots: list[int] = [0]  # line numbers where a boot starts
        self.anchors: dict[int, float] = {}  # boot segment index -> boot time (unix seconds)

    def see(self, line_no: int, line: str) -> None:
        if BOOT_START.match(line):
            if line_no > self.boots[-1]:
                self.boots.append(line_no)
            return
        match = RTC_ANCHOR.match(line) or AUDIT_ANCHOR.match(line)
        if match:
            uptime = int(match.group(1)) + _fraction(match.group(2))
            wall = int(match.group(3)) + (_fraction(match.group(4)) if match.lastindex >= 4 and match.group(4) else 0)
            segment = bisect.bisect_right(self.boots, line_no) - 1
            self.anchors.setdefault(segment, wall - uptime)

    def resolve(self, line_no: int, uptime: float) -> float | None:
        segment = bisect.bisect_right(self.boots, line_no) - 1
        boot = self.anchors.get(segment)
        return None if boot is None else boot + uptime
