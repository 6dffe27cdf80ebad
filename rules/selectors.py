"""Reads for rule sets, and the engines that run them."""

from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection

from rules.engine import Engine
from rules.engines import ENGINE_CACHE, engine_for
from rules.models import RuleSetRevision
from rules.revisions import compile_revision, pack_text

DEFAULT_RULESET = "default"


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
    return _pack_engine(pack_text(settings.FAULTLINE_RULES_PATH))


@lru_cache(maxsize=2)
def _pack_engine(text: str) -> Engine:
    return Engine(compile_revision(DEFAULT_RULESET, 1, text), ENGINE_CACHE)


def _database_ready() -> bool:
    name = connection.settings_dict["NAME"]
    in_memory = str(name) == ":memory:" or str(name).startswith("file:")
    if connection.vendor == "sqlite" and not in_memory and not Path(name).exists():
        return False  # not created yet; connecting would create it
    try:
        return "rules_rulesetrevision" in connection.introspection.table_names()
    except DatabaseError:
        return False
