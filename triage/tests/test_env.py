"""Settings read from the environment: a list of named choices (``env_choices``) refuses what it does not know."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from triage.env import env_choices

KEYS = ("job", "name and user", "name")


def test_a_list_of_choices_keeps_its_order(monkeypatch):
    monkeypatch.delenv("FAULTLINE_COMPARE_BY", raising=False)
    assert env_choices("FAULTLINE_COMPARE_BY", ["job", "name and user"], KEYS) == ["job", "name and user"]
    monkeypatch.setenv("FAULTLINE_COMPARE_BY", " name , job")
    assert env_choices("FAULTLINE_COMPARE_BY", ["job"], KEYS) == ["name", "job"]


@pytest.mark.parametrize(("value", "named"), [("job,user", "'user'"), (" , ", "''")])
def test_an_unknown_or_empty_choice_is_refused_naming_it(monkeypatch, value, named):
    monkeypatch.setenv("FAULTLINE_COMPARE_BY", value)
    with pytest.raises(
        ImproperlyConfigured,
        match=f"FAULTLINE_COMPARE_BY must list one or more of job, name and user, name, not {named}",
    ):
        env_choices("FAULTLINE_COMPARE_BY", ["job"], KEYS)
