"""Rule sets and their revisions: the list, a rule set's revisions and activation log, diffs, a revision and
activating it (the editor is ``editor.py``)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from rules import permissions, selectors, services
from workbench import selectors as workbench_selectors
from workbench.permissions import RUN_BATCH
from workbench.views import revision_or_404, ruleset_or_404


@login_required
@require_GET
def ruleset_list(request):
    return render(request, "workbench/ruleset_list.html", {"rulesets": selectors.ruleset_list()})


@login_required
@require_GET
def ruleset_detail(request, name: str):
    ruleset = ruleset_or_404(name)
    revisions = list(selectors.revision_list(ruleset))
    context = {
        "ruleset": ruleset,
        "revisions": revisions,
        "active": next((r for r in revisions if r.active), None),
        "activations": selectors.activation_list(ruleset)[:50],
        "can_edit": request.user.has_perm(permissions.EDIT_RULES),
    }
    return render(request, "workbench/ruleset_detail.html", context)


@login_required
@require_GET
def ruleset_diff(request, name: str):
    ruleset = ruleset_or_404(name)
    numbers = [request.GET.get(key, "") for key in ("a", "b")]
    if not all(number.isdigit() for number in numbers):
        return render(
            request,
            "workbench/ruleset_diff.html",
            {"ruleset": ruleset, "error": "choose two revisions to compare (a and b)"},
            status=400,
        )
    old, new = (revision_or_404(name, int(number)) for number in numbers)
    context = {
        "ruleset": ruleset,
        "old": old,
        "new": new,
        "table": selectors.revision_diff(old, new),
        "stats": selectors.revision_diff_stats(old, new),
    }
    return render(request, "workbench/ruleset_diff.html", context)


@login_required
@require_GET
def revision_detail(request, name: str, number: int):
    revision = revision_or_404(name, number)
    active = selectors.revision_active(name)
    context = {
        "revision": revision,
        "active": active,
        "lines": revision.text.splitlines(),
        "can_edit": request.user.has_perm(permissions.EDIT_RULES),
        "can_activate": request.user.has_perm(permissions.ACTIVATE),
        "can_run": request.user.has_perm(RUN_BATCH),
        "activations": workbench_selectors.revision_activations(revision),
    }
    return render(request, "workbench/revision_detail.html", context)


@login_required
@permission_required(permissions.ACTIVATE, raise_exception=True)
@require_POST
def revision_activate(request, name: str, number: int):
    revision = revision_or_404(name, number)
    try:
        activation = services.revision_activate(
            revision=revision, user=request.user, message=request.POST.get("message", "")
        )
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("workbench:revision", name=name, number=number)
    verb = "Rolled back to" if activation.is_rollback else "Activated"
    messages.success(request, f"{verb} {revision}: new analyses use it. Reanalyse stored attempts to apply it.")
    return redirect("workbench:ruleset", name=name)
