"""Gather: the attempt's context from its cluster's connector, whatever kind of connector that is.

A small registry maps ``Cluster.connector`` to a function returning the engine's ``AttemptContext``;
each connector package registers its kind here. Gatherers raise ``ConnectorError`` (``permanent``
says whether a retry can help).
"""

from collections.abc import Callable

from connectors.base import ConnectorError
from connectors.localfiles import load_bundle
from diagnoses import bundles
from diagnoses.models import Attempt
from rules.engine.context import AttemptContext

Gatherer = Callable[[Attempt], AttemptContext]
GATHERERS: dict[str, Gatherer] = {}


def gatherer(kind: str) -> Callable[[Gatherer], Gatherer]:
    """Register ``function`` as the gatherer of clusters whose connector is ``kind``."""

    def register(function: Gatherer) -> Gatherer:
        GATHERERS[kind] = function
        return function

    return register


@gatherer("localfiles")
def gather_stored_bundle(attempt: Attempt) -> AttemptContext:
    """The attempt's stored bundle, read by the local-files connector."""
    return load_bundle(bundles.path_of(attempt.bundle))


def gather(attempt: Attempt) -> AttemptContext:
    kind = attempt.cluster.connector
    try:
        function = GATHERERS[kind]
    except KeyError:
        raise ConnectorError(
            f"cluster {attempt.cluster.name}: unknown connector kind {kind!r}", permanent=True
        ) from None
    return function(attempt)
