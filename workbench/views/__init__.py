"""The rule workbench's pages, one module per topic: ``rulesets`` (rule sets, revisions, diffs, activation),
``editor`` (the rule editor), ``trials`` (a revision tried on a stored attempt, the rule explorer), ``cases``
(regression cases) and ``runs`` (backtests and reanalyses). Thin views: reads through the selectors
(``rules.selectors``, ``workbench.selectors``), writes through the services.

Every page needs a login; every write needs the rule editor's permission (``rules.permissions``,
``workbench.permissions``), and anyone else gets 403. Log text and rule text are always escaped.
"""

from django.http import Http404

from rules import selectors
from rules.models import RuleSet, RuleSetRevision


def revision_or_404(name: str, number: int) -> RuleSetRevision:
    revision = selectors.revision_get(name, number)
    if revision is None:
        raise Http404(f"rule set {name!r} has no revision {number}")
    return revision


def ruleset_or_404(name: str) -> RuleSet:
    ruleset = selectors.ruleset_get(name)
    if ruleset is None:
        raise Http404(f"no rule set {name!r}")
    return ruleset
