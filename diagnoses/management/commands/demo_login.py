"""``manage.py demo_login``: create (or reset) the demo login, an admin, and print its password."""

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from access.roles import ADMIN

USERNAME = "demo"


class Command(BaseCommand):
    help = "Create or reset the 'demo' login (admin role) with a new random password, and print both."

    def handle(self, *args, **options):
        user, _ = get_user_model().objects.get_or_create(username=USERNAME)
        password = secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = user.is_superuser = True
        user.save()
        user.groups.add(Group.objects.get(name=ADMIN))
        self.stdout.write(f"Sign in at http://localhost:8000 as {USERNAME} with the password {password}")
