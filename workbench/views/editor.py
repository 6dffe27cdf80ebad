"""The rule editor: a revision's outline (its files and rule ids, searchable), one rule edited alone or the whole
text, checked as it is typed with the engine's own loader; saving creates a draft revision through
``rules.services.revision_create`` (the same validation and revisions as the API)."""

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from engine import RuleSetError, parse_ruleset
from rules import permissions, selectors, services
from rules.models import RuleSet, RuleSetRevision
from rules.outline import File, RuleSpan, file_of_line, outline, rule_find, rule_replace
from web.htmx import render_page, render_partial
from workbench.views import revision_or_404, ruleset_or_404


@dataclass(frozen=True)
class Problem:
    """One of the loader's errors as the editor shows it: its line in the whole text, the file (document) that
    holds it, and whether that line is in the editor (the rule being edited, or the whole text)."""

    line: int
    file: str
    rule: str
    field: str
    reason: str
    here: bool


@login_required
@permission_required(permissions.EDIT_RULES, raise_exception=True)
@require_http_methods(["GET", "POST"])
def editor(request, name: str):
    ruleset = ruleset_or_404(name)
    base = _base(ruleset, request.POST.get("parent") or request.GET.get("from"))
    files = outline(base.text) if base else []
    rule_id = (request.POST.get("rule") or request.GET.get("rule") or "").strip()
    rule = rule_find(files, rule_id) if rule_id else None
    status = 200
    if rule_id and rule is None:
        messages.error(request, f"{base or ruleset.name} has no rule {rule_id!r}: the whole text is below.")
        status = 404
    text = _lines(request.POST.get("text", rule.text if rule else base.text if base else ""))
    if request.method == "POST" and status == 200:
        whole = rule_replace(base.text, rule, text) if rule else text
        try:
            revision = services.revision_create(
                ruleset=ruleset, text=whole, author=request.user, message=request.POST.get("message", ""), parent=base
            )
        except RuleSetError:
            messages.error(request, "The draft was not saved: the rule set has errors (below, at their lines).")
            status = 400
        else:
            messages.success(request, f"Saved draft {revision}. It runs nowhere until it is activated.")
            url = reverse("workbench:revision", args=[name, revision.number])
            return redirect(f"{url}#L{rule.first}" if rule else url)
    q = request.GET.get("q", "").strip()
    context = {
        "ruleset": ruleset,
        "base": base,
        "rule": rule,
        "text": text,
        "message": request.POST.get("message", ""),
        "q": q,
        "files": _matching(files, q, rule),
        "rule_total": sum(len(file.rules) for file in files),
        "rule_ids": sorted(r.id for file in files for r in file.rules),
        **rule_check(ruleset.name, text, base=base, rule=rule),
    }
    return render_page(request, "workbench/editor.html", context, partials=("editor-outline",), status=status)


@login_required
@permission_required(permissions.EDIT_RULES, raise_exception=True)
@require_POST
def editor_check(request, name: str):
    ruleset = ruleset_or_404(name)
    rule_id, parent = request.POST.get("rule", ""), request.POST.get("parent", "")
    base = rule = None
    if rule_id:
        base = revision_or_404(name, int(parent)) if parent.isdigit() else None
        rule = rule_find(outline(base.text), rule_id) if base else None
        if rule is None:
            raise Http404(f"no rule {rule_id!r} to check in {base or ruleset.name}")
    context = rule_check(ruleset.name, _lines(request.POST.get("text", "")), base=base, rule=rule)
    return render_partial(request, "workbench/editor.html", "editor-errors", context)


def _base(ruleset: RuleSet, number: str | None) -> RuleSetRevision | None:
    """The revision a draft starts from: the one asked for, else the active one, else the newest."""
    if number and number.isdigit():
        return revision_or_404(ruleset.name, int(number))
    return selectors.revision_active(ruleset.name) or selectors.revision_list(ruleset).first()


def _lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def rule_check(name: str, text: str, *, base: RuleSetRevision | None = None, rule: RuleSpan | None = None) -> dict:
    """The editor's validation. ``text`` is what the editor holds: the whole text, or with ``rule`` that rule's
    lines, checked in ``base``'s text. Every error of the loader, by its line in the whole text; those in the
    editor are marked there."""
    whole = services.normalise_text(rule_replace(base.text, rule, text) if rule else text)
    total = whole.count("\n")
    first = rule.first if rule else 1
    last = first + text.rstrip("\n").count("\n") if rule else total
    try:
        errors, rules = [], len(parse_ruleset([(f"{name}.yaml", whole)], name=name).rules)
    except RuleSetError as exc:
        errors, rules = exc.errors, 0
    files = outline(whole, rules=False) if errors else []
    problems = []
    for error in errors:
        line = min(max(error.line, 1), total)
        file = file_of_line(files, line)
        here = first <= line <= last
        problems.append(
            Problem(line, file.name if file else f"{name}.yaml", error.rule, error.field, error.reason, here)
        )
    return {"errors": problems, "rule_count": rules, "first_line": first}


def _matching(files: list[File], q: str, rule: RuleSpan | None) -> list[dict]:
    """The outline as shown: each file with its rules whose id or text holds ``q`` (all without ``q``), open when
    it holds the rule being edited or a search found something in it."""
    needle = q.casefold()
    shown = []
    for file in files:
        rules = [r for r in file.rules if needle in r.id.casefold() or needle in r.text.casefold()]
        if rules or not q:
            holds = rule is not None and any(r.id == rule.id for r in file.rules)
            shown.append({"name": file.name, "rules": rules, "open": holds or bool(q)})
    return shown
