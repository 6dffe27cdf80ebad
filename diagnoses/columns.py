"""What a value must be to fit its column: an attempt record is checked field by field before anything is
stored (a refusal names the field), and text that comes from a bundle's contents (node names found in
logs, stream names, evidence) is made to fit instead (NUL replaced, cut at the column's length).

PostgreSQL refuses NUL characters in text and in JSON, and lone surrogates cannot be encoded: both
would otherwise surface as a 500 at the insert.
"""

from __future__ import annotations

import json

from diagnoses.models import Attempt, Cluster, Job, Node
from engine.context import Attempt as ParsedAttempt

INTEGER_MAX = 2**31 - 1  # PostgreSQL integer, the column of PositiveIntegerField
ATTEMPT_COLUMNS = (
    ("cluster", Cluster, "name"),
    ("job_id", Job, "job_id"),
    ("scheduler", Attempt, "scheduler"),
    ("state", Attempt, "state"),
    ("exit_code", Attempt, "exit_code"),
    ("user", Attempt, "user"),
    ("name", Attempt, "name"),
)


class DoesNotFit(ValueError):
    """A field of the record cannot be stored; the message names it."""


def attempt_check(parsed: ParsedAttempt, record: dict, where: str = "attempt.json") -> None:
    """Refuse (``DoesNotFit``) a record whose fields do not fit their columns."""
    try:
        text = json.dumps(record, ensure_ascii=False)
        text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        raise DoesNotFit(f"{where}: holds text that is not valid Unicode (a lone surrogate)") from None
    for name, model, column in ATTEMPT_COLUMNS:
        value = getattr(parsed, name)
        longest = model._meta.get_field(column).max_length
        if len(value) > longest:
            raise DoesNotFit(f"{where}: field {name!r} is longer than {longest} characters")
    if "\\u0000" in text:
        raise DoesNotFit(f"{where}: field {_nul_field(record)!r} holds a NUL character")
    if "/" in parsed.cluster:
        raise DoesNotFit(f"{where}: field 'cluster' must not contain '/'")
    if parsed.attempt > INTEGER_MAX:
        raise DoesNotFit(f"{where}: field 'attempt' must be at most {INTEGER_MAX}")
    longest = Node._meta.get_field("name").max_length
    for node in parsed.nodes:
        if len(node) > longest:
            raise DoesNotFit(f"{where}: field 'nodes': a node name is longer than {longest} characters")


def _nul_field(record: dict) -> str:
    return next((key for key, value in record.items() if "\\u0000" in json.dumps([key, value])), "?")


def fitted(value: str, model, column: str) -> str:
    """Text from a bundle's contents made to fit ``model.column``: NUL replaced, cut at its length."""
    value = value.replace("\x00", "\ufffd")
    longest = model._meta.get_field(column).max_length
    return value if longest is None or len(value) <= longest else value[: longest - 1] + "…"
