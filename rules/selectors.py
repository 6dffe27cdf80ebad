"""Reads for rule sets, and the engines that run them."""

import difflib

from django.db import DatabaseError, connection
from django.db.models import Count, OuterRef, Prefetch, QuerySet, Subquery

from engine import Engine
from rules.engine_cache import DEFAULT_RULESET, database_created, engine_for, engine_pack
from rules.models import Activation, RuleSet, RuleSetRevision


def revision_active(name: str = DEFAULT_RULESET) -> RuleSetRevision | None:
    """The active revision (its text is read only when needed: see ``revision_engine``)."""
    revisions = RuleSetRevision.objects.select_related("ruleset").defer("text")
    return revisions.filter(ruleset__name=name, active=True).first()


def revision_engine(revision: RuleSetRevision) -> Engine:
    """The compiled engine of ``revision``, once per process; the text must have the stored digest."""
    return engine_for(revision.ruleset.name, revision.number, revision.digest, lambda: revision.text)


def engine_current() -> Engine:
    """The engine of the active default revision, read-only: the pack as revision 1 when none is stored.

    For what stores nothing (``manage.py diagnose``, the stateless analyse endpoint): it gives the
    diagnosis the pipeline stores for the same bundle. Without a usable database it is the pack.
    """
    revision = revision_active() if _database_ready() else None
    if revision is not None:
        return revision_engine(revision)
    return engine_pack()


def _database_ready() -> bool:
    if not database_created():
        return False
    try:
        return "rules_rulesetrevision" in connection.introspection.table_names()
    except DatabaseError:
        return False


def ruleset_get(name: str) -> RuleSet | None:
    return RuleSet.objects.filter(name=name).first()


def ruleset_list() -> QuerySet[RuleSet]:
    """Rule sets with their number of revisions and active revision number."""
    active = RuleSetRevision.objects.filter(ruleset=OuterRef("pk"), active=True)
    return RuleSet.objects.annotate(
        revision_count=Count("revisions"), active_number=Subquery(active.values("number")[:1])
    )


def rulesets_with_active_revision() -> QuerySet[RuleSet]:
    """Rule sets, each with its active revision (a list of none or one) as ``active_revisions``."""
    active = RuleSetRevision.objects.filter(active=True).only("pk", "ruleset_id")
    return RuleSet.objects.prefetch_related(Prefetch("revisions", queryset=active, to_attr="active_revisions"))


def revisions_all() -> QuerySet[RuleSetRevision]:
    return RuleSetRevision.objects.select_related("ruleset", "author")


def revision_list(ruleset: RuleSet) -> QuerySet[RuleSetRevision]:
    return ruleset.revisions.select_related("author", "parent").defer("text")


def revision_get(ruleset_name: str, number: int) -> RuleSetRevision | None:
    return (
        RuleSetRevision.objects.select_related("ruleset", "author", "parent")
        .filter(ruleset__name=ruleset_name, number=number)
        .first()
    )


def activation_list(ruleset: RuleSet | None = None) -> QuerySet[Activation]:
    activations = Activation.objects.select_related("ruleset", "revision", "previous", "user")
    return activations if ruleset is None else activations.filter(ruleset=ruleset)


def revision_diff(old: RuleSetRevision, new: RuleSetRevision, context: int = 3) -> str:
    """The two texts side by side as an HTML table (``difflib.HtmlDiff``, which escapes the text);
    only the changed lines and ``context`` lines around them."""
    return difflib.HtmlDiff(tabsize=4, wrapcolumn=100).make_table(
        old.text.splitlines(),
        new.text.splitlines(),
        fromdesc=f"r{old.number}",
        todesc=f"r{new.number}",
        context=True,
        numlines=context,
    )


def revision_diff_stats(old: RuleSetRevision, new: RuleSetRevision) -> tuple[int, int]:
    """(lines added, lines removed) from ``old`` to ``new``."""
    added = removed = 0
    for line in difflib.unified_diff(old.text.splitlines(), new.text.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed
