"""The Clusters page: where each cluster's discovery stands, and the health of its sources."""

from django.contrib.auth.decorators import login_required
from django.utils import timezone
from django.views.decorators.http import require_GET

from diagnoses import selectors
from web.htmx import render_page

STATES = {
    "uploads": "uploads only (no scheduler)",
    "disabled": "discovery off",
    "polling": "polling now",
    "backing_off": "backing off",
    "new": "not polled yet",
    "ok": "ok",
    "failing": "failing",
    "unused": "not asked yet",
}
# A source that failed is skipped until its retry time: its circuit breaker is open (diagnoses/services/gathering.py).
SOURCE_STATES = {**STATES, "backing_off": "circuit open: skipped"}


@login_required
@require_GET
def cluster_status(request):
    """The full page, or (for htmx's periodic refresh) the table it includes."""
    now = timezone.now()
    rows = []
    for cluster in selectors.cluster_status_list():
        status = selectors.cluster_status(cluster, now=now)
        sources = [{**source, "label": SOURCE_STATES[source["state"]]} for source in status["sources"]]
        rows.append({"cluster": cluster, "status": status, "label": STATES[status["state"]], "sources": sources})
    can_change = request.user.is_staff and request.user.has_perm("diagnoses.change_cluster")  # in the admin
    context = {"rows": rows, "can_change": can_change}
    return render_page(request, "pages/cluster_status.html", context, partials=("cluster-status",))
