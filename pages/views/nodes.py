"""A node's page: how often it was the root cause and in which subdomains, its recent events and attempts,
and the repeat-offender badge."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.utils import timezone
from django.views.decorators.http import require_GET

from pages import paging, selectors
from pages.views import cursor
from web.htmx import render_page


@login_required
@require_GET
def node_detail(request, cluster: str, name: str):
    node = selectors.node_find(cluster=cluster, name=name)
    if node is None:
        raise Http404("no such node")
    days = settings.FAULTLINE_REPEAT_OFFENDER_DAYS
    recent = selectors.node_root_causes(node, since=timezone.now() - timedelta(days=days))
    recent_count = sum(row["count"] for row in recent)
    page = paging.seek(selectors.node_attempts(node), sort="-end", size=20, **cursor(request))
    context = {
        "node": node,
        "causes": selectors.node_root_causes(node),
        "recent_count": recent_count,
        "window_days": days,
        "threshold": settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
        "repeat_offender": recent_count >= settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
        "page": page,
        "at_fault": {
            row.pk
            for row in page.rows
            if row.current_diagnosis and node.pk in {n.pk for n in row.current_diagnosis.root_cause_nodes.all()}
        },
        "events": selectors.node_events_recent(node),
    }
    return render_page(request, "pages/node_detail.html", context, partials=("node-attempts",), push=True)
