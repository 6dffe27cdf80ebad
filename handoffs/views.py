"""``/metrics``: the Prometheus metrics, for a scraper that presents the bearer token or comes from an allowed network,
and for a signed-in person with the permission ``diagnoses.read_metrics`` (the admin role).

``FAULTLINE_METRICS_TOKEN`` (or the file ``FAULTLINE_METRICS_TOKEN_FILE``) is the token (``Authorization: Bearer
<token>``); ``FAULTLINE_METRICS_NETWORKS`` lists the networks (CIDR) allowed without one (``make run`` allows the
loopback addresses). With neither, every scrape is refused. A scrape only reads (the counts of events,
``diagnoses.EventCount``, and the attempts' counts from the daily rollups, ``diagnoses.VerdictDay`` and
``VerdictNodeDay``: tens of milliseconds at a million attempts, docs/performance.md); its answer is kept in the
process's cache for ``FAULTLINE_METRICS_CACHE_SECONDS``.
"""

import hmac
import ipaddress

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse, HttpResponseForbidden
from django.views.decorators.http import require_GET

from handoffs.exposition import exposition

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # the text format generate_latest writes
CACHE_KEY = "faultline:metrics"
READ_PERMISSION = "diagnoses.read_metrics"


@require_GET
def metrics(request):
    if not _allowed(request):
        return HttpResponseForbidden(
            "metrics: present the bearer token, scrape from an allowed network or sign in as an admin\n"
        )
    body = cache.get(CACHE_KEY) if settings.FAULTLINE_METRICS_CACHE_SECONDS else None
    if body is None:
        body = exposition()
        if settings.FAULTLINE_METRICS_CACHE_SECONDS:
            cache.set(CACHE_KEY, body, settings.FAULTLINE_METRICS_CACHE_SECONDS)
    return HttpResponse(body, content_type=CONTENT_TYPE)


def _allowed(request) -> bool:
    if request.user.is_authenticated and request.user.has_perm(READ_PERMISSION):
        return True
    token = settings.FAULTLINE_METRICS_TOKEN
    presented = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(presented.encode(), f"Bearer {token}".encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in settings.FAULTLINE_METRICS_NETWORKS)
