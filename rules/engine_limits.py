"""The engine's limits (``engine.Limits``) as the settings ``FAULTLINE_*`` set them (docs/operations.md)."""

from django.conf import settings

from engine import Limits


def bundle_limits() -> Limits:
    return Limits(
        line_bytes=settings.FAULTLINE_LINE_MAX_BYTES,
        json_bytes=settings.FAULTLINE_JSON_MAX_BYTES,
        json_depth=settings.FAULTLINE_JSON_MAX_DEPTH,
        events=settings.FAULTLINE_EVENTS_MAX,
        series=settings.FAULTLINE_SERIES_MAX,
        nodes=settings.FAULTLINE_NODES_MAX,
        ranks=settings.FAULTLINE_RANKS_MAX,
    )
