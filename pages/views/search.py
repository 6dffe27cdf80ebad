"""The search from the header: attempts by job id or name, nodes by name, users by name, each leading on to its
page or to the list filtered by it."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from pages import paging, selectors

LIMIT = 20  # of each kind; the lists they lead to have the rest


@login_required
@require_GET
def search(request):
    q = request.GET.get("q", "").strip()
    found = selectors.search(q, limit=LIMIT) if q else {"attempts": [], "nodes": [], "users": []}
    context = {
        "q": q,
        "limit": LIMIT,
        **found,
        "page": paging.one_page(found["attempts"]),
        "total": sum(len(rows) for rows in found.values()),
    }
    return render(request, "pages/search.html", context)
