"""Writes for rule sets."""

from django.conf import settings
from django.db import IntegrityError, transaction

from rules.models import RuleSet, RuleSetRevision
from rules.revisions import compile_revision, pack_text
from rules.selectors import DEFAULT_RULESET, revision_active


def ruleset_create_from_pack(*, name: str = DEFAULT_RULESET, path=None) -> RuleSetRevision:
    """Store the pack at ``path`` (default: ``FAULTLINE_RULES_PATH``) as the active revision 1 of ``name``.

    Safe against a concurrent first use: whoever loses the race returns the winner's revision.
    """
    text = pack_text(path or settings.FAULTLINE_RULES_PATH)
    compiled = compile_revision(name, 1, text)
    ruleset, _ = RuleSet.objects.get_or_create(name=name)
    try:
        with transaction.atomic():
            return RuleSetRevision.objects.create(
                ruleset=ruleset,
                number=1,
                text=text,
                digest=compiled.digest,
                message="The default rule pack",
                active=True,
            )
    except IntegrityError:
        return RuleSetRevision.objects.select_related("ruleset").get(ruleset=ruleset, number=1)


def active_revision(name: str = DEFAULT_RULESET) -> RuleSetRevision:
    """The active revision of ``name``; on first use of the default rule set, revision 1 from the pack."""
    revision = revision_active(name)
    if revision is not None:
        return revision
    if name != DEFAULT_RULESET:
        raise RuleSetRevision.DoesNotExist(f"rule set {name!r} has no active revision")
    return ruleset_create_from_pack(name=name)
