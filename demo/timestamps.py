"""How each log source prints a moment: the timestamp forms of docs/bundles.md.

Every function takes an aware datetime and the zone the source prints in. Month and weekday names
are spelled here rather than by ``strftime`` so that the output never depends on the locale.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def syslog(moment: datetime, zone: tzinfo) -> str:
    """Classic syslog (RFC 3164), no year: ``Aug  1 12:53:04``."""
    local = moment.astimezone(zone)
    return f"{MONTHS[local.month - 1]} {local.day:>2} {local:%H:%M:%S}"


def journal(moment: datetime, zone: tzinfo) -> str:
    """``journalctl -o short-iso``: ``2024-08-01T12:53:04+0200``."""
    return moment.astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S%z")


def dmesg_t(moment: datetime, zone: tzinfo) -> str:
    """``dmesg -T``: ``[Thu Aug  1 12:53:04 2024]``."""
    local = moment.astimezone(zone)
    return f"[{WEEKDAYS[local.weekday()]} {MONTHS[local.month - 1]} {local.day:>2} {local:%H:%M:%S} {local.year}]"


def dmesg_minute(moment: datetime, zone: tzinfo) -> str:
    """``dmesg -H``'s stamp when the minute changes (strftime ``%b%e %H:%M``): ``[Nov 2 10:14]``, ``[Nov12 10:14]``."""
    local = moment.astimezone(zone)
    return f"[{MONTHS[local.month - 1]}{local.day:>2} {local:%H:%M}]"


def dmesg_relative(seconds: float) -> str:
    """``dmesg -H``'s stamp within a minute: the time since the previous line, ``[  +0.000844]``, ``[ +12.345678]``."""
    return f"[  {seconds:+8.6f}]" if seconds < 10 else f"[ {seconds:+9.6f}]"


def uptime(seconds: float) -> str:
    """The kernel's own stamp, seconds since boot: ``[12345.678901]``."""
    micro = round(seconds * 1_000_000)
    return f"[{micro // 1_000_000:5d}.{micro % 1_000_000:06d}]"


def glog(level: str, moment: datetime, zone: tzinfo) -> str:
    """glog, as torchrun's agent logs: ``W0801 12:53:04.123456``."""
    local = moment.astimezone(zone)
    return f"{level}{local:%m%d %H:%M:%S}.{local.microsecond:06d}"


def c10(level: str, moment: datetime, zone: tzinfo, nanoseconds: int) -> str:
    """PyTorch's C++ logging: month not zero-padded, nanoseconds: ``E801 12:53:04.123456789``."""
    local = moment.astimezone(zone)
    return f"{level}{local.month}{local.day:02d} {local:%H:%M:%S}.{local.microsecond:06d}{nanoseconds % 1000:03d}"


def python_logging(moment: datetime, zone: tzinfo) -> str:
    """Python ``logging``'s default asctime: ``2024-08-01 12:53:04,123``."""
    local = moment.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M:%S},{local.microsecond // 1000:03d}"


def seconds(moment: datetime, zone: tzinfo) -> str:
    """``2024-08-01 12:53:04``, as Megatron-LM stamps its iteration lines."""
    return f"{moment.astimezone(zone):%Y-%m-%d %H:%M:%S}"


def slurm(moment: datetime, zone: tzinfo) -> str:
    """Slurm's local time without offset, as in ``CANCELLED AT 2024-08-01T12:53:04``."""
    return f"{moment.astimezone(zone):%Y-%m-%dT%H:%M:%S}"


def torchrun_failure(moment: datetime, zone: tzinfo) -> str:
    """The ``time`` field of torchrun's failure report: ``2024-08-01_12:53:04``."""
    return f"{moment.astimezone(zone):%Y-%m-%d_%H:%M:%S}"


def rfc3339(moment: datetime) -> str:
    """UTC with a ``Z``, whole seconds: attempt records, events."""
    return f"{moment.astimezone(UTC):%Y-%m-%dT%H:%M:%S}Z"
