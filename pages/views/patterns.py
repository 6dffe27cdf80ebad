"""The failure patterns (docs/leads.md): the templates that lead the attempts the rules did not settle, across
clusters, by how many attempts each would explain; a pattern's page (its template with the variable parts marked,
where it was seen, example attempts) where a triager assigns it or marks it known (no rule wanted), and a rule
editor drafts a rule from it (the workbench)."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from diagnoses import selectors
from diagnoses.models import Template
from diagnoses.services import leads as lead_services
from leads import template_parts
from pages import paging
from pages.views import cursor
from pages.views.attempts import REVIEW_PERMISSION
from rules.permissions import EDIT_RULES
from web.htmx import render_page

PAGE_SIZE = 50
ORDERS = {"attempts": "-attempts", "recent": "-last_seen"}
EXAMPLES = 20  # example attempts on a pattern's page


@login_required
@require_http_methods(["GET"])
def pattern_list(request):
    order = request.GET.get("order") if request.GET.get("order") in ORDERS else "attempts"
    status = request.GET.get("status") if request.GET.get("status") in (*Template.Status.values, "all") else "new"
    rows = selectors.pattern_list(status=None if status == "all" else status)
    page = paging.seek(rows, sort=ORDERS[order], size=PAGE_SIZE, **cursor(request))
    clusters = selectors.pattern_clusters(page.rows)
    patterns = [(pattern, template_parts(pattern.text), clusters[pattern.pk]) for pattern in page.rows]
    context = {"page": page, "patterns": patterns, "order": order, "status": status, "statuses": Template.Status}
    return render_page(request, "pages/patterns.html", context, partials=("pattern-table",), push=True)


@login_required
@require_http_methods(["GET", "POST"])
def pattern_detail(request, key: str):
    pattern = selectors.pattern_get(key)
    if pattern is None:
        raise Http404("no such pattern")
    if request.method == "POST":
        return _pattern_update(request, pattern)
    examples = list(selectors.pattern_leads(pattern)[:EXAMPLES])
    context = {
        "pattern": pattern,
        "parts": template_parts(pattern.text),
        "clusters": selectors.pattern_clusters([pattern])[pattern.pk],
        "examples": examples,
        "nodes": sorted({lead.node for lead in examples if lead.node}),
        "people": get_user_model().objects.filter(is_active=True).order_by("username").only("pk", "username"),
        "may_change": request.user.has_perm(REVIEW_PERMISSION),
        "may_draft": request.user.has_perm(EDIT_RULES),
    }
    return render_page(request, "pages/pattern_detail.html", context, push=True)


def _pattern_update(request, pattern: Template):
    if not request.user.has_perm(REVIEW_PERMISSION):
        raise PermissionDenied
    changes = {}
    if "assignee" in request.POST:
        name = request.POST["assignee"]
        assignee = get_user_model().objects.filter(username=name, is_active=True).first() if name else None
        if name and assignee is None:
            messages.error(request, f"assignee: no active person is called {name!r}.")
            return redirect("pages:pattern-detail", key=pattern.key)
        changes["assignee"] = assignee
    if request.POST.get("status"):
        changes["status"] = request.POST["status"]
    try:
        lead_services.pattern_update(pattern=pattern, by=request.user, **changes)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Pattern updated.")
    return redirect("pages:pattern-detail", key=pattern.key)
