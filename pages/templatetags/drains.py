"""``{% drain_panel attempt=attempt %}`` and ``{% drain_panel node=node %}``: the drains of the attempt's root-cause
nodes (or of the node), and the forms to propose, approve and resume them for the people who may."""

from django import template

from handoffs import selectors
from handoffs.models import Drain

register = template.Library()


@register.inclusion_tag("pages/handoffs/drain_panel.html", takes_context=True)
def drain_panel(context, *, attempt=None, node=None):
    request = context["request"]
    if node is not None:
        nodes, cluster = [node], node.cluster
    elif attempt is not None and attempt.current_diagnosis is not None:
        nodes, cluster = list(attempt.current_diagnosis.root_cause_nodes.all()), attempt.cluster
    else:
        nodes, cluster = [], None
    drains = selectors.drains_of_nodes(nodes)
    active = {drain.node_id for drain in drains if drain.state in Drain.ACTIVE}
    diagnosis = attempt.current_diagnosis if attempt is not None else None
    return {
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "nodes": nodes,
        "cluster": cluster,
        "attempt": attempt,
        "drains": drains,
        "proposable": [n for n in nodes if n.pk not in active],
        "default_reason": f"{diagnosis.subdomain} (job {attempt.job.job_id})"
        if diagnosis and diagnosis.subdomain
        else "",
        "can_drain": cluster is not None and selectors.cluster_can_drain(cluster),
        "may_propose": request.user.has_perm("handoffs.add_drain"),
        "may_approve": request.user.has_perm("handoffs.approve_drain"),
        "may_resume": request.user.has_perm("handoffs.resume_drain"),
    }
