"""Compiled engines, one per rule-set revision and process.

Compiling a rule set costs about half a second, so a process compiles each revision once and keeps
its engine (a few, least recently used first out); diagnoses never compile per attempt.
"""

from collections import OrderedDict
from collections.abc import Callable

from django.conf import settings

from engine import Engine
from rules.revisions import compile_revision

CACHE_SIZE = 8
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
