"""``manage.py create_user USERNAME --role lead``: the first people of a deployment, without the admin site.

The password never appears on the command line (where `ps` and shell history would keep it): it is read from an
environment variable (``--password-from-env NAME``) or typed twice (``--prompt``)."""

from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING, Any

from django.core.management.base import BaseCommand, CommandError

from studio.permissions import Role
from studio.services import UserProblem, user_create

if TYPE_CHECKING:
    from django.core.management.base import CommandParser


class Command(BaseCommand):
    help = "Create a user with a role (annotator, lead, engineer or admin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=[role.value for role in Role])
        parser.add_argument("--email", default="")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--password-from-env", metavar="VARIABLE", help="read the password from this environment variable"
        )
        source.add_argument("--prompt", action="store_true", help="type the password (twice)")

    def handle(
        self, username: str, role: str, email: str, password_from_env: str | None, prompt: bool, **options: Any
    ) -> None:
        if password_from_env:
            password = os.environ.get(password_from_env)
            if not password:
                raise CommandError(f"the environment variable {password_from_env} is not set or empty")
        else:
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the two passwords differ")
        try:
            user = user_create(username=username, role=Role(role), password=password, email=email)
        except UserProblem as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"created {role} {user.username!r} (id {user.pk}); add them to projects with "
            f"`manage.py create_project NAME --member {user.username}` or on the project's settings page"
        )
