import pytest

from engine import Engine, load_rules


@pytest.fixture(scope="session")
def engine():
    """The default rule pack, compiled once."""
    return Engine(load_rules("rules/packs/default"))
