"""``manage.py demo_login``: make the demo login (an admin) once, and print how to sign in with it at each start.

Its password is made once, kept in ``<var>/demo_password`` (readable by its owner only) and printed again at the next
start, unchanged: a restart of ``make run`` signs nobody out. ``--reset`` makes a new one (signing the demo login out
everywhere), as does a missing file. A password changed since (in the admin, say) is left alone and not printed: the
file no longer matches it.
"""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from access.roles import ADMIN

USERNAME = "demo"


def password_file() -> Path:
    return Path(settings.VAR_DIR) / "demo_password"


class Command(BaseCommand):
    help = (
        "Make the 'demo' login (admin role) once, with a random password kept in <var>/demo_password, and print both; "
        "--reset makes a new password."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reset", action="store_true", help="a new password (signs the demo login out)")
        parser.add_argument("--url", default="http://localhost:8000", help="where to sign in (printed)")

    def handle(self, *args, reset, url, **options):
        user, created = get_user_model().objects.get_or_create(username=USERNAME)
        kept = password_file().read_text().strip() if password_file().exists() else ""
        if created or reset or not kept:  # (no file: a login made before the password was kept, or the file removed)
            password = secrets.token_urlsafe(9)
            user.set_password(password)
            _keep(password)
        elif kept and user.check_password(kept):
            password = kept
        else:
            self.stdout.write(
                f"Sign in at {url} as {USERNAME}: its password was changed since it was made, so it is not shown "
                "(manage.py demo_login --reset makes a new one)"
            )
            return
        user.is_staff = user.is_superuser = True
        user.save()
        user.groups.add(Group.objects.get(name=ADMIN))
        self.stdout.write(f"Sign in at {url} as {USERNAME} with the password {password}")


def _keep(password: str) -> None:
    """Write the password to its file, readable by its owner only (made so before anything is written)."""
    path = password_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(password + "\n")
