"""From a failure pattern to a rule (docs/leads.md): "Draft a rule" opens a rule made from the pattern's template
(``leads.rule_draft``: literal parts escaped, variable parts RE2 groups, the stream kind it appeared in), whose
domain and subdomain a person chooses; saving appends it to the active revision as a new draft revision and tries it
on the pattern's attempts (each one's stored diagnosis beside the draft's). From there: backtest it over history and
activate it as any revision, then reanalyse the pattern's attempts."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt, Template
from diagnoses.services.attempts import attempts_reanalyse
from diagnoses.trials import revision_tried
from engine import RuleSetError
from leads import rule_draft, template_parts
from rules import permissions, selectors, services
from workbench.permissions import RUN_BATCH
from workbench.views import revision_or_404, ruleset_or_404
from workbench.views.editor import rule_check

TRIED_AT_MOST = 100  # of the pattern's attempts, newest first, that a draft is tried on


def _pattern_or_404(key: str) -> Template:
    pattern = diagnoses_selectors.pattern_get(key)
    if pattern is None:
        raise Http404("no such pattern")
    return pattern


@login_required
@permission_required(permissions.EDIT_RULES, raise_exception=True)
@require_http_methods(["GET", "POST"])
def pattern_draft(request, key: str):
    pattern = _pattern_or_404(key)
    ruleset = ruleset_or_404(selectors.DEFAULT_RULESET)
    base = services.active_revision()
    text = request.POST.get("text") or rule_draft(pattern.text, pattern.key, pattern.kind)
    message = request.POST.get("message") or f"A rule for the failure pattern {pattern.key}"
    checked = rule_check(ruleset.name, text)
    status = 200
    if request.method == "POST":
        if checked["errors"]:
            messages.error(request, "The rule was not saved: it has problems (below, at their lines).")
            status = 400
        else:
            try:
                revision = services.revision_create(
                    ruleset=ruleset, text=f"{base.text.rstrip()}\n---\n{text}", author=request.user,
                    message=message, parent=base,
                )  # fmt: skip
            except RuleSetError as exc:
                messages.error(request, f"The rule was not saved: {exc.errors[0]}")
                status = 400
            else:
                messages.success(request, f"Saved draft {revision}, tried below on the pattern's attempts.")
                return redirect("workbench:pattern-trial", name=ruleset.name, number=revision.number, key=pattern.key)
    context = {"pattern": pattern, "parts": template_parts(pattern.text), "ruleset": ruleset, "base": base,
               "text": text, "message": message, **checked}  # fmt: skip
    return render(request, "workbench/pattern_draft.html", context, status=status)


@login_required
@require_GET
def pattern_trial(request, name: str, number: int, key: str):
    """The revision tried on the pattern's attempts: each one's stored diagnosis and the revision's, and what
    changed."""
    revision = revision_or_404(name, number)
    pattern = _pattern_or_404(key)
    ids = diagnoses_selectors.pattern_attempt_ids(pattern)[:TRIED_AT_MOST]
    attempts = Attempt.objects.filter(pk__in=ids).select_related("job", "cluster", "current_diagnosis")
    rows = revision_tried(revision=revision, attempts=sorted(attempts, key=lambda a: (-a.end.timestamp(), -a.pk)))
    context = {
        "revision": revision,
        "pattern": pattern,
        "parts": template_parts(pattern.text),
        "rows": rows,
        "changed": sum(1 for row in rows if row.get("changes")),
        "of": len(ids),
        "may_run": request.user.has_perm(RUN_BATCH),
        "may_activate": request.user.has_perm(permissions.ACTIVATE),
    }
    return render(request, "workbench/pattern_trial.html", context)


@login_required
@permission_required(RUN_BATCH, raise_exception=True)
@require_POST
def pattern_reanalyse(request, key: str):
    """Queue the analysis of the pattern's attempts with the active revision (after a rule for it was activated)."""
    pattern = _pattern_or_404(key)
    queued = attempts_reanalyse(
        attempts=Attempt.objects.filter(pk__in=diagnoses_selectors.pattern_attempt_ids(pattern))
    )
    messages.success(request, f"Queued {queued} attempts of pattern {pattern.key} for analysis with the active rules.")
    return redirect("pages:pattern-detail", key=pattern.key)
