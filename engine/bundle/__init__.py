"""The attempt bundle (docs/bundles.md): the on-disk form of the engine's input, ``AttemptContext``.

One module family for the format: ``reader`` (``load_bundle``, ``parse_attempt``: a bundle directory and
an ``attempt.json`` document in, an ``AttemptContext`` out), ``writer`` (``write_bundle``,
``attempt_document``: the inverse), ``query_range`` (the Prometheus ``query_range`` body that
``metrics/*.json`` hold). Pure like the rest of the engine: files in, objects out, no Django.
"""

from engine.bundle.reader import (
    ATTEMPT_FILE,
    FLIGHT_RECORDER,
    HISTORY,
    LOG_SUFFIXES,
    SOURCES_FILE,
    BundleError,
    load_bundle,
    parse_attempt,
    parse_time,
)
from engine.bundle.writer import attempt_document, rfc3339, write_bundle, write_history

__all__ = [
    "ATTEMPT_FILE",
    "FLIGHT_RECORDER",
    "HISTORY",
    "LOG_SUFFIXES",
    "SOURCES_FILE",
    "BundleError",
    "attempt_document",
    "load_bundle",
    "parse_attempt",
    "parse_time",
    "rfc3339",
    "write_bundle",
    "write_history",
]
