"""The authentication backend (settings.AUTHENTICATION_BACKENDS): Django's ModelBackend, with the signed-in user's
row read by a query compiled once (studio.db.OneRowRead) rather than a queryset built on every request, their group
names in the same row (``permissions.user_roles`` takes the request's roles from it). Passwords,
permissions and the checks of ``django.contrib.auth.get_user`` (the session's password hash, an inactive user) are
Django's own. A session signed in before names Django's ModelBackend; ``studio.sessions`` reads it as this one.
With single sign-on's passwords off, a password signs in the break-glass admin only."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth import backends, get_user_model
from django.contrib.auth.models import User
from django.db import connections, router
from django.db.models import QuerySet, TextField
from django.db.models.expressions import RawSQL
from django.http import HttpRequest

from studio.db import OneRowRead
from studio.permissions import GROUP_NAMES_READ, group_names_column

PATH = "studio.auth_backend.ModelBackend"
DJANGO_PATH = "django.contrib.auth.backends.ModelBackend"


def _user_by_pk(slots: dict[str, Any]) -> QuerySet[User]:
    """The user's row with their group names (``permissions.user_roles`` reads them from it): one query, where
    reading the roles apart was one more query, and one more transaction, on every request."""
    model = get_user_model()
    users = model._default_manager.filter(pk=slots["pk"])
    column = group_names_column(model, connections[router.db_for_read(model)].vendor)
    if column is not None:
        users = users.annotate(**{GROUP_NAMES_READ: RawSQL(column, (), output_field=TextField())})
    return users[:1]


@functools.cache
def _user_read() -> OneRowRead:
    return OneRowRead(_user_by_pk, {"pk": get_user_model()._meta.pk})


# The user a request's session read brought along (studio.sessions), while Django's get_user runs for that request.
_read_along: contextvars.ContextVar[User | None] = contextvars.ContextVar("studio_user_read_along", default=None)


@contextlib.contextmanager
def user_read_along(user: User | None) -> Iterator[None]:
    """While it lasts, ``ModelBackend.get_user`` of ``user``'s id answers ``user`` instead of reading the row."""
    token = _read_along.set(user)
    try:
        yield
    finally:
        _read_along.reset(token)


class ModelBackend(backends.ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        # Single sign-on with passwords off (settings.OIDC): only the break-glass admin's password still counts.
        config = getattr(settings, "OIDC", None)
        if config is not None and not config.local_passwords and username != config.break_glass_user:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id: Any) -> User | None:
        along = _read_along.get()
        user = along if along is not None and str(along.pk) == str(user_id) else _user_read().first(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
