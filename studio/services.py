"""Writes of the shared core: people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from studio.errors import Invalid
from studio.inputs import text_problem
from studio.models import AccountSettings, ShortcutMode
from studio.permissions import Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class UserProblem(Invalid):
    """A user that cannot be created as asked; the message says why."""


@transaction.atomic
def user_create(*, username: str, role: Role, password: str, email: str = "") -> User:
    """A new account with one role: a group for annotator, lead and engineer; a superuser (staff) for admin.

    The password must pass the project's validators (AUTH_PASSWORD_VALIDATORS), as on any password form. An
    existing username is refused rather than changed: this is how the first people of a deployment are made,
    and it must never quietly reset someone's password or role."""
    User = get_user_model()
    username = (username or "").strip()
    user = User(username=username, email=email)
    try:
        User._meta.get_field("username").run_validators(username)
        if not username:
            raise ValidationError("a username is required")
        if email:  # its form and length, which PostgreSQL would otherwise refuse at the insert (a traceback)
            User._meta.get_field("email").run_validators(email)
        # A command line or environment variable that is not UTF-8 arrives with lone surrogates, which no
        # password hash can encode.
        problem = text_problem(password)
        if problem:
            raise ValidationError(f"the password {problem}")
        validate_password(password, user=user)
    except ValidationError as exc:
        raise UserProblem("; ".join(exc.messages)) from None
    if User.objects.filter(username=username).exists():
        raise UserProblem(f"a user named {username!r} already exists")
    user.set_password(password)
    if role == Role.ADMIN:
        user.is_staff = user.is_superuser = True
    user.save()
    if role != Role.ADMIN:
        # get_or_create: the role groups come from a data migration, which a flushed test database lacks.
        user.groups.add(Group.objects.get_or_create(name=role.value)[0])
    return user


class SettingsProblem(Invalid):
    """Account settings that cannot be stored as asked; the message says why."""


def account_settings_update(
    *, user: User, shortcuts: str | None = None, language: str | None = None
) -> AccountSettings:
    """Stores ``user``'s own settings; a setting given as None stays as it is.

    ``shortcuts``: how they take single-key shortcuts (a ShortcutMode value). ``language``: the language they see
    the studio in, a code of ``settings.LANGUAGES``, or "" for the browser's (the caller keeps it in the session,
    studio.i18n)."""
    from django.conf import settings

    changes: dict[str, str] = {}
    if shortcuts is not None:
        if shortcuts not in ShortcutMode.values:
            raise SettingsProblem(
                _("shortcuts must be one of %(modes)s, not '%(given)s'")
                % {"modes": ", ".join(ShortcutMode.values), "given": shortcuts}
            )
        changes["shortcuts"] = shortcuts
    if language is not None:
        language = language.strip()
        if language and language not in {code for code, _name in settings.LANGUAGES}:
            raise SettingsProblem(_("No such language: %(language)s.") % {"language": language})
        changes["language"] = language
    chosen, _created = AccountSettings.objects.update_or_create(user=user, defaults=changes)
    return chosen
