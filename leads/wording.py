"""Error-like wording: which lines may show a failure, and how strongly their words say so.

Each entry is a case-insensitive pattern and its weight: 1.0 for words that name a failure outright (fatal, killed,
out of memory, segmentation fault, no space left, permission denied, an Xid, evicted, ...), 0.7 for the generic ones
(error, failed, exception, timed out, refused, aborted, ...), 0.4 for hints (warning, retry, unexpected, SIGTERM, a
traceback's header). Stack frames never count; a short heading ending in ":" counts as a hint at most.
A line with none of them is never a lead. A line printed at an informational level (``INFO``, ``DEBUG``, glog's
``I1102``) is known to be normal whatever its words.
"""

from __future__ import annotations

import re

WORDING: tuple[tuple[str, float, str], ...] = (
    # (pattern, weight, the name shown in a lead's "why")
    (r"\bfatal", 1.0, "fatal"),
    (r"\bpanic", 1.0, "panic"),
    (r"segmentation fault|\bsegfault|\bsigsegv\b", 1.0, "segmentation fault"),
    (r"\bsig(?:bus|kill|abrt)\b", 1.0, "a fatal signal"),
    (r"\bxid\b", 1.0, "an Xid"),
    (r"\bevict", 1.0, "evicted"),
    (r"time limit", 1.0, "time limit"),
    (r"core dumped", 1.0, "core dumped"),
    (r"out of memory|\boom(?:[-_ ]?kill\w*)?\b|cannot allocate memory", 1.0, "out of memory"),
    (r"\bkilled\b", 1.0, "killed"),
    (r"uncorrectable", 1.0, "uncorrectable"),
    (r"no space left", 1.0, "no space left"),
    (r"permission denied|access denied", 1.0, "permission denied"),
    (r"no such file", 1.0, "no such file"),
    (r"bus error", 1.0, "bus error"),
    (r"\billegal\b", 1.0, "illegal"),
    (r"\bcorrupt", 1.0, "corrupt"),
    (r"\bunhandled\b", 1.0, "unhandled"),
    (r"\bassert(?:ion)?\b", 1.0, "assertion"),
    (r"\berr(?:or|ors)?\b|\w+error\b", 0.7, "error"),
    (r"\bfail", 0.7, "failed"),
    (r"\bexception\b|\w+exception\b", 0.7, "exception"),
    (r"timed? ?out\b|\btimeout", 0.7, "timeout"),
    (r"\brefused\b|reset by peer|\bunreachable\b", 0.7, "refused"),
    (r"\bunable to\b|\bcannot\b|\bcan't\b|\bcould not\b|\bcouldn't\b", 0.7, "cannot"),
    (
        r"\bexit(?:ed)?(?: with)? (?:code|status)[ \t]*[:=]?[ \t]*-?[1-9]|\bexitcode[ \t]*[:=][ \t]*-?[1-9]",
        0.7,
        "a non-zero exit",
    ),
    (r"\bterminat", 0.7, "terminated"),
    (r"\babort", 0.7, "abort"),
    (r"\bsignal \d+", 0.7, "a signal"),
    (r"\bcancel", 0.7, "cancelled"),
    (r"low on resource|\bexceed", 0.7, "exceeded"),
    (r"\bdenied\b", 0.7, "denied"),
    (r"\binvalid\b", 0.7, "invalid"),
    (r"\bnot found\b", 0.7, "not found"),
    (r"\bcrash", 0.7, "crash"),
    (r"\bstuck\b|\bhung\b|\bhang(?:s|ing)?\b", 0.7, "stuck"),
    (r"\bmismatch", 0.7, "mismatch"),
    (r"\bviolation\b", 0.7, "violation"),
    (r"\blost\b|\bdead\b|\bunresponsive\b", 0.7, "lost"),
    (r"\bwarn(?:ing)?\b", 0.4, "warning"),
    (r"\bretry|\bretrying\b", 0.4, "retry"),
    (r"\bunexpected", 0.4, "unexpected"),
    (r"^traceback\b", 0.4, "a traceback"),
    (r"\bsigterm\b", 0.4, "SIGTERM"),
)
_COMPILED = tuple((re.compile(pattern, re.IGNORECASE), weight, name) for pattern, weight, name in WORDING)
# What the prefilter looks for in raw bytes: any entry's pattern, unanchored.
PREFILTER = tuple(pattern.lstrip("^") for pattern, _weight, _name in WORDING)

# Lines that carry no message of their own: stack frames (Python, C++, Java) and where an exception was raised.
_BOILERPLATE = re.compile(
    r'^\s*(?:frame #\d+:|File "[^"]*", line \d+|at [\w.$<>]+\(|Exception raised from |\^+\s*$|~+\s*$)'
)
HEADING_WORDS = 5  # a message of at most this many words that ends with ":" heads what follows (a hint at most)
_INFO_LEVEL = re.compile(r"(?:^|[\s\[|:])(?:INFO|DEBUG|TRACE)(?:[\s\]|:]|$)|^I\d{4} \d\d:")


def wording(message: str) -> tuple[float, str]:
    """The strongest weight of the message's error-like words and that word's name; (0.0, "") for none, and for a
    stack frame. A heading ("Failures:", "Root Cause (first observed failure):") weighs 0.4 at most."""
    if _BOILERPLATE.match(message):
        return (0.0, "")
    best = (0.0, "")
    for regex, weight, name in _COMPILED:
        if weight > best[0] and regex.search(message):
            best = (weight, name)
            if weight == 1.0:
                break
    if best[0] > 0.4 and message.rstrip().endswith(":") and len(message.split()) <= HEADING_WORDS:
        return (0.4, best[1])
    return best


def informational(line: str) -> bool:
    """Whether the line is printed at an informational level (known to be normal)."""
    return _INFO_LEVEL.search(line, 0, 200) is not None
