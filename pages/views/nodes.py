"""The node inventory (every node: the attempts it ran, how often it was the root cause, its drain; filtered by
cluster, name and fault) and a node's page: how often it was the root cause (by the attempts' verdicts of record)
and in which subdomains, its own causes by attempt, then its other events (filtered by role; teardown left out
unless asked for), its attempts, and the repeat-offender badge."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.utils import timezone
from django.views.decorators.http import require_GET

from diagnoses.selectors import nodes_named_root_cause
from handoffs import selectors as handoff_selectors
from pages import paging, selectors
from pages.views import cursor
from web.htmx import render_page

PAGE_SIZE = 50
ROLES = [  # the filter of the node's other events: (value, label)
    ("", "all but teardown"),
    ("cascade", "cascade"),
    ("cause", "cause (not chosen)"),
    ("context", "context"),
    ("teardown", "teardown"),
    ("root_cause", "root cause (of an attempt whose verdict is elsewhere)"),
    ("candidate", "candidate (of an attempt whose verdict is elsewhere)"),
    ("all", "all"),
]


@login_required
@require_GET
def node_list(request):
    days = settings.FAULTLINE_REPEAT_OFFENDER_DAYS
    nodes = handoff_selectors.node_inventory(since=timezone.now() - timedelta(days=days))
    q, cluster, fault = (request.GET.get(key, "").strip() for key in ("q", "cluster", "fault"))
    if q:
        nodes = nodes.filter(name__icontains=q)
    if cluster:
        nodes = nodes.filter(cluster__name=cluster)
    if fault:
        nodes = nodes.filter(pk__in=nodes_named_root_cause())
    context = {
        "page": paging.seek(nodes, sort="name", size=PAGE_SIZE, **cursor(request)),
        "filters": {"q": q, "cluster": cluster, "fault": fault},
        "clusters": selectors.cluster_names(),
        "window_days": days,
        "threshold": settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
    }
    return render_page(request, "pages/node_list.html", context, partials=("node-table",), push=True)


@login_required
@require_GET
def node_detail(request, cluster: str, name: str):
    node = selectors.node_find(cluster=cluster, name=name)
    if node is None:
        raise Http404("no such node")
    role = request.GET.get("role", "")
    role = role if role in dict(ROLES) else ""
    days = settings.FAULTLINE_REPEAT_OFFENDER_DAYS
    causes = selectors.node_root_causes(node, since=timezone.now() - timedelta(days=days))
    recent_count = sum(row["recent"] for row in causes)
    page = paging.seek(selectors.node_attempts(node), sort="-end", size=20, **cursor(request))
    context = {
        "node": node,
        "causes": causes,
        "recent_count": recent_count,
        "window_days": days,
        "threshold": settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
        "repeat_offender": recent_count >= settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
        "page": page,
        "at_fault": {row.pk for row in page.rows if node.pk in {n.pk for n in row.verdict_nodes.all()}},
        "own_causes": selectors.node_causes(node),
        "role": role,
        "roles": ROLES,
        "events": selectors.node_events_other(node, role=role),
    }
    return render_page(request, "pages/node_detail.html", context, partials=("node-attempts", "node-events"), push=True)
