"""The deadline of one gathering: every HTTP call a connector makes while it runs (``connectors.http_client``) waits
at most until then, and none starts after it, however many tries and seconds the source's own settings allow. Set by
``connectors.gather.gather`` for the calls made in its context (its threads get a copy)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_end: ContextVar[float | None] = ContextVar("gathering_deadline", default=None)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Calls made in the block end ``seconds`` from now (None: no deadline)."""
    token = _end.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _end.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (0 once past it), or None when there is none."""
    end = _end.get()
    return None if end is None else max(0.0, end - time.monotonic())
