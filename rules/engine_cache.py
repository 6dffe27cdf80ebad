"""Compiled engines, one per rule-set revision and process, and the default pack's.

Compiling a rule set costs about half a second, so a process compiles each revision once and keeps
its engine (a few, least recently used first out); diagnoses never compile per attempt. Nothing here
needs the app registry: ``manage.py diagnose`` without a database runs without loading the project's
apps (docs/performance.md).
"""

from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from engine import Engine
from rules.revisions import compile_revision, pack_text

CACHE_SIZE = 8
DEFAULT_RULESET = "default"
ENGINE_CACHE = settings.VAR_DIR / "cache"  # compiled pattern databases, shared by short-lived processes
_engines: OrderedDict[tuple[str, int, str], Engine] = OrderedDict()


def engine_for(name: str, number: int, digest: str, text: Callable[[], str]) -> Engine:
    """The engine of revision ``number`` of rule set ``name``, whose text (read by calling ``text`` only
    when it must be compiled) has this ``digest``; raises ``RuleSetError`` or, when the text does not
    have the digest, ``ValueError``."""
    key = (name, number, digest)
    engine = _engines.get(key)
    if engine is None:
        engine = Engine(compile_revision(name, number, text()), ENGINE_CACHE)
        if engine.ruleset.digest != digest:
            raise ValueError(f"{name} revision {number}: digest {digest} does not match its text")
        _engines[key] = engine
        while len(_engines) > CACHE_SIZE:
            _engines.popitem(last=False)
    else:
        _engines.move_to_end(key)
    return engine


def engine_pack() -> Engine:
    """The engine of the default pack at ``FAULTLINE_RULES_PATH``, as revision 1 of the default rule set."""
    return _pack_engine(pack_text(settings.FAULTLINE_RULES_PATH))


@lru_cache(maxsize=2)
def _pack_engine(text: str) -> Engine:
    return Engine(compile_revision(DEFAULT_RULESET, 1, text), ENGINE_CACHE)


def database_created() -> bool:
    """False when the configured database is an SQLite file not created yet (connecting would create it).

    Reads the settings only: importing the database backend costs more than the rest of the check."""
    database = settings.DATABASES["default"]
    name = str(database["NAME"])
    in_memory = name == ":memory:" or name.startswith("file:")
    return not database["ENGINE"].endswith("sqlite3") or in_memory or Path(name).exists()
