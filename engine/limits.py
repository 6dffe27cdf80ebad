"""How much of a bundle the engine reads at most, and the hook that stops an analysis early.

A bundle comes from outside (an upload, a watched folder): past these limits a file is refused (the
attempt record) or read in part and the cut reported in the diagnosis's sources (logs, events,
metrics). The defaults are Faultline's documented ones (docs/operations.md); the Django settings
``FAULTLINE_BUNDLE_MAX_*`` override them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    line_bytes: int = 16 << 20  # a longer line is cut here and flagged (never below the 8 MiB read block)
    json_bytes: int = 32 << 20  # attempt.json, each events/*.json and metrics/*.json file
    json_depth: int = 32  # nesting of those JSON documents
    events: int = 100_000  # scheduler events read from a bundle; further ones are left out and reported
    series: int = 10_000  # metric series read from a bundle; likewise
    nodes: int = 10_000  # nodes of one attempt
    ranks: int = 1 << 20  # ranks of one attempt (explicit ``ranks`` or nodes x ``tasks_per_node``)


DEFAULT_LIMITS = Limits()
Interrupt = Callable[[], None]  # called between blocks and streams; raises to stop the analysis


class TooLarge(ValueError):
    """A document past a limit; the message says which."""


def load_json(raw: bytes, limits: Limits):
    """A JSON document within the size and nesting limits (``TooLarge``, ``ValueError`` otherwise)."""
    if len(raw) > limits.json_bytes:
        raise TooLarge(f"larger than {limits.json_bytes:,} bytes")
    try:
        document = json.loads(raw)
    except RecursionError:
        raise TooLarge(f"nested deeper than {limits.json_depth} levels") from None
    if _depth(document, limits.json_depth) > limits.json_depth:
        raise TooLarge(f"nested deeper than {limits.json_depth} levels")
    return document


def _depth(document, stop: int) -> int:
    """How deep ``document`` nests (lists and objects), counted up to ``stop + 1``; iterative."""
    deepest = 0
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        deepest = max(deepest, depth)
        if deepest > stop:
            return deepest
        pending.extend((item, depth + 1) for item in value if isinstance(item, (dict, list)))
    return deepest
