"""The one interface every connector implements, and its one error type.

Schedulers discover failed attempts; log sources fetch logs and metric sources fetch series for an
attempt's nodes and window. All of them return the engine's context types (``rules.engine.context``)
and raise ``ConnectorError``, whose ``permanent`` flag says whether retrying can help.
"""

from __future__ import annotations


class ConnectorError(Exception):
    """A connector could not gather what it was asked for.

    ``permanent`` is True when retrying cannot help (bad configuration, malformed input) and False for
    transient failures (timeouts, 5xx, 429) that a retry with backoff may cure.
    """

    def __init__(self, message: str, *, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent
