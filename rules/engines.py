"""Compiled engines, one per rule-set revision and process.

Compiling a rule set costs about half a second, so a process compiles each revision once and keeps
its engine (a few, least recently used first out); diagnoses never compile per attempt.
"""

from collections import OrderedDict

from rules.engine import Engine
from rules.revisions import compile_revision

CACHE_SIZE = 8
_engines: OrderedDict[tuple[str, int, str], Engine] = OrderedDict()


def engine_for(name: str, number: int, text: str) -> Engine:
    """The engine of revision ``number`` of rule set ``name`` with this ``text``; raises ``RuleSetError``."""
    key = (name, number, text)
    engine = _engines.get(key)
    if engine is None:
        engine = _engines[key] = Engine(compile_revision(name, number, text))
        while len(_engines) > CACHE_SIZE:
            _engines.popitem(last=False)
    else:
        _engines.move_to_end(key)
    return engine
