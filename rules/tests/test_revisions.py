"""Rule-set revisions: the pack as revision 1, one active revision, the engine cache, diagnose's default."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import IntegrityError

from engine import load_rules
from rules.engine_cache import engine_for
from rules.models import RuleSet, RuleSetRevision
from rules.revisions import compile_revision, pack_text
from rules.selectors import engine_current, revision_engine
from rules.services import active_revision

BASE_DIR = Path(__file__).resolve().parents[2]


def test_the_pack_as_one_text_compiles_to_the_same_rules():
    from_files = load_rules(settings.FAULTLINE_RULES_PATH)
    text = pack_text(settings.FAULTLINE_RULES_PATH)

    revision = compile_revision("default", 1, text)

    assert text.count("\n---\n") == len(list(Path(settings.FAULTLINE_RULES_PATH).glob("*.yaml"))) - 1
    assert [rule.id for rule in revision.rules] == [rule.id for rule in from_files.rules]
    assert [rule.patterns for rule in revision.rules] == [rule.patterns for rule in from_files.rules]
    assert revision.settings == from_files.settings
    assert (revision.name, revision.version) == ("default", "1")
    assert revision.digest.startswith("sha256:")


def test_a_revision_is_named_and_numbered_by_the_store_not_its_text():
    compiled = compile_revision("gpu-team", 7, pack_text(settings.FAULTLINE_RULES_PATH))

    assert (compiled.name, compiled.version) == ("gpu-team", "7")


@pytest.mark.django_db
def test_the_default_pack_becomes_revision_1_on_first_use():
    first = active_revision()
    again = active_revision()

    assert first == again
    assert (first.ruleset.name, first.number, first.active) == ("default", 1, True)
    assert first.digest == compile_revision("default", 1, first.text).digest
    assert RuleSetRevision.objects.count() == 1


@pytest.mark.django_db
def test_only_one_revision_of_a_rule_set_is_active():
    first = active_revision()

    with pytest.raises(IntegrityError):
        RuleSetRevision.objects.create(
            ruleset=first.ruleset, number=2, text=first.text, digest=first.digest, parent=first, active=True
        )


@pytest.mark.django_db
def test_revision_numbers_are_unique_per_rule_set():
    first = active_revision()
    other = RuleSet.objects.create(name="other")
    RuleSetRevision.objects.create(ruleset=other, number=1, text=first.text, digest=first.digest)

    with pytest.raises(IntegrityError):
        RuleSetRevision.objects.create(ruleset=first.ruleset, number=1, text=first.text, digest=first.digest)


@pytest.mark.django_db
def test_engines_are_compiled_once_per_revision():
    revision = active_revision()

    assert revision_engine(revision) is revision_engine(RuleSetRevision.objects.get(pk=revision.pk))
    assert engine_for("default", 1, revision.digest, lambda: "not read again") is revision_engine(revision)


@pytest.mark.django_db
def test_a_revision_whose_text_does_not_match_its_digest_is_not_run():
    revision = active_revision()
    revision.digest = "sha256:" + "0" * 64  # the text no longer has the stored digest

    with pytest.raises(ValueError, match="does not match its text"):
        revision_engine(revision)


@pytest.mark.django_db
def test_the_current_engine_is_the_active_revision_or_else_the_pack():
    unstored = engine_current()
    assert not RuleSetRevision.objects.exists()  # reading stores nothing

    revision = active_revision()
    revision.active = False
    revision.save()
    edited = revision.text.replace("ambiguity_window: 5s", "ambiguity_window: 6s")
    second = RuleSetRevision.objects.create(
        ruleset=revision.ruleset,
        number=2,
        text=edited,
        digest=compile_revision("default", 2, edited).digest,
        parent=revision,
        active=True,
    )

    assert unstored.ruleset.digest == revision.digest
    assert engine_current().ruleset.digest == second.digest
    assert engine_current().ruleset.version == "2"


def test_diagnose_without_a_database_uses_the_pack_as_revision_1(tmp_path, make_bundle):
    bundle = make_bundle(root=tmp_path)
    env = {"PATH": "/usr/bin:/bin", "FAULTLINE_VAR_DIR": str(tmp_path / "var")}  # no DATABASE_URL: SQLite
    printed = subprocess.run(
        [sys.executable, "manage.py", "diagnose", str(bundle)], cwd=BASE_DIR, env=env, capture_output=True, check=True
    ).stdout.decode()

    expected = compile_revision("default", 1, pack_text(settings.FAULTLINE_RULES_PATH)).digest
    assert f'"digest": "{expected}"' in printed
    assert not (tmp_path / "var" / "faultline.sqlite3").exists()
