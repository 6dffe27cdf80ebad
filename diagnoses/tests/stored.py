"""Analysed attempts and signed-in people for the page tests (server-side and in the browser)."""

from pathlib import Path

from django.contrib.auth.models import Group, Permission, User

from access.roles import assign_role_permissions
from diagnoses.models import Attempt
from diagnoses.services import analysis, attempts

PASSWORD = "a long password for tests"


def store(bundle: Path) -> Attempt:
    """Ingest the bundle and analyse it here and now (no task queue)."""
    attempt = attempts.attempt_ingest_directory(path=bundle, analyse=False)
    analysis.attempt_analyse(attempt_id=attempt.pk)
    return Attempt.objects.select_related("cluster", "job", "current_diagnosis").get(pk=attempt.pk)


def person(role: str | None, name: str = "") -> User:
    """A user with the role's group (``None``: a signed-in user without any role) and ``PASSWORD``."""
    user = User.objects.create_user(name or f"person-{role}", password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def replace_in(bundle: Path, relative: str, old: str, new: str) -> None:
    """Edit one file of a test bundle (a line of unusual text, for instance)."""
    file = bundle / relative
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))


def roles_ensure() -> None:
    """The role groups with their permissions (flushing the database after a transactional test removes them)."""
    assign_role_permissions(Group, Permission)
