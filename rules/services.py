"""Writes for rule sets: revisions (drafts), activation with its audit log, rule sets themselves."""

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from rules.models import Activation, RuleSet, RuleSetRevision
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
            revision = RuleSetRevision.objects.create(
                ruleset=ruleset,
                number=1,
                text=text,
                digest=compiled.digest,
                message="The default rule pack",
                active=True,
            )
            Activation.objects.create(ruleset=ruleset, revision=revision, message=revision.message)
            return revision
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


def revision_create(
    *, ruleset: RuleSet, text: str, author=None, message: str = "", parent: RuleSetRevision | None = None
) -> RuleSetRevision:
    """Save ``text`` as the next revision of ``ruleset``: a draft (not active) that runs nowhere until activated.

    The text must load with the engine's own loader: ``RuleSetError`` lists every problem (file, line, field).
    """
    text = normalise_text(text)
    if parent is not None and parent.ruleset_id != ruleset.pk:
        raise ValueError(f"the parent revision {parent} belongs to another rule set")
    with transaction.atomic():
        RuleSet.objects.select_for_update().filter(pk=ruleset.pk).first()  # one new number at a time
        number = (ruleset.revisions.aggregate(last=Max("number"))["last"] or 0) + 1
        compiled = compile_revision(ruleset.name, number, text)
        return RuleSetRevision.objects.create(
            ruleset=ruleset,
            number=number,
            text=text,
            digest=compiled.digest,
            parent=parent,
            author=author,
            message=message.strip(),
        )


def revision_activate(*, revision: RuleSetRevision, user=None, message: str = "") -> Activation:
    """Make ``revision`` the one active revision of its rule set and log who did it (a rollback when older).

    The rule set's row is locked, so concurrent activations happen one after the other.
    """
    with transaction.atomic():
        RuleSet.objects.select_for_update().filter(pk=revision.ruleset_id).first()
        previous = RuleSetRevision.objects.filter(ruleset_id=revision.ruleset_id, active=True).first()
        if previous is not None and previous.pk == revision.pk:
            raise ValueError(f"{revision} is already the active revision")
        RuleSetRevision.objects.filter(ruleset_id=revision.ruleset_id, active=True).update(active=False)
        RuleSetRevision.objects.filter(pk=revision.pk).update(active=True)
        activation = Activation.objects.create(
            ruleset_id=revision.ruleset_id, revision=revision, previous=previous, user=user, message=message.strip()
        )
    revision.active = True
    return activation


def normalise_text(text: str) -> str:
    """Rule text as stored: Unix line ends (browsers send CRLF), ending with one newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip("\n") + "\n"
