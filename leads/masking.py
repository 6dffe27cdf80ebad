"""Turn a log message into its template's words: the parts that vary from one occurrence to the next are masked.

Masked, in this order (each placeholder names what it stood for): times and dates (``<TIME>``), URLs (``<URL>``),
file paths (``<PATH>``), network and PCI addresses (``<ADDR>``), UUIDs (``<ID>``), hexadecimal numbers (``<HEX>``),
the attempt's host names and NCCL/UCX host prefixes (``<HOST>``), rank numbers (``rank <RANK>``), and every other run
of digits (``<NUM>``, inside words too: ``node<NUM>``, ``mlx<NUM>_<NUM>``). Runs of whitespace become one space.
The same message and hosts always give the same words.
"""

from __future__ import annotations

import re

PLACEHOLDERS = ("<TIME>", "<URL>", "<PATH>", "<ADDR>", "<ID>", "<HEX>", "<HOST>", "<RANK>", "<NUM>")

_TIME = re.compile(
    r"\d{4}-\d\d-\d\d(?:[T _]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?"
    r"|\b\d{1,2}:\d\d:\d\d(?:[.,]\d+)?\b"
)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w.:/<])(?:~|\.{1,2})?(?:/[\w.@+~%=,-]+){2,}/?|(?<![\w.:/<])(?:\.{1,2})(?:/[\w.@+~%=,-]+)+/?")
_ADDR = re.compile(
    r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b"  # IPv4, with its port
    r"|\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b"  # PCI domain:bus:device.function
    r"|\b(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\b"  # MAC
    r"|\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}\b"  # IPv6 (full form)
)
_ID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{6,}\b")
# NCCL's "host:pid:tid [dev]" and UCX's "[host:pid:tid]" prefixes name the host whatever it is called.
_HOST_PREFIX = re.compile(r"^(\[?)[A-Za-z0-9.*][A-Za-z0-9_.*-]*(:\d+:\d+(?::\d+)?\]? )")
_RANK = re.compile(r"(\b(?:rank|local_rank|global_rank|LOCAL_RANK|RANK)\b\s*[:=#]?\s*)\d+", re.IGNORECASE)
_NUM = re.compile(r"\d+(?:\.\d+)*")
_SPACE = re.compile(r"\s+")


class Masker:
    """Masks messages of one attempt, whose host names are ``hosts``."""

    def __init__(self, hosts: tuple[str, ...] = ()):
        names = sorted({h for h in hosts if h}, key=lambda h: (-len(h), h))
        self._hosts = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])") if names else None

    def mask(self, message: str) -> str:
        return self.mask_rest(self.mask_hosts(message))

    def mask_hosts(self, message: str) -> str:
        """The message with the attempt's host names masked (the one step that needs its digits as they are)."""
        return message if self._hosts is None else self._hosts.sub("<HOST>", message)

    def mask_rest(self, message: str) -> str:
        """Every other step; the same words for any two messages that differ only in their digits other than 0."""
        text = _HOST_PREFIX.sub(r"\1<HOST>\2", message, count=1)
        text = _TIME.sub("<TIME>", text)
        text = _URL.sub("<URL>", text)
        text = _PATH.sub("<PATH>", text)
        text = _ADDR.sub("<ADDR>", text)
        text = _ID.sub("<ID>", text)
        text = _HEX.sub("<HEX>", text)
        text = _RANK.sub(r"\1<RANK>", text)
        text = _NUM.sub("<NUM>", text)
        return _SPACE.sub(" ", text).strip()
