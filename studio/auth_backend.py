"""The authentication backend (settings.AUTHENTICATION_BACKENDS): Django's ModelBackend, with the signed-in user's
row read by a query compiled once (studio.db.OneRowRead) rather than a queryset built on every request. Passwords,
permissions and the checks of ``django.contrib.auth.get_user`` (the session's password hash, an inactive user) are
Django's own. A session signed in before names Django's ModelBackend; ``studio.sessions`` reads it as this one.
With single sign-on's passwords off, a password signs in the break-glass admin only."""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.contrib.auth import backends, get_user_model
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest

from studio.db import OneRowRead

PATH = "studio.auth_backend.ModelBackend"
DJANGO_PATH = "django.contrib.auth.backends.ModelBackend"


def _user_by_pk(slots: dict[str, Any]) -> QuerySet[User]:
    return get_user_model()._default_manager.filter(pk=slots["pk"])[:1]


@functools.cache
def _user_read() -> OneRowRead:
    return OneRowRead(_user_by_pk, {"pk": get_user_model()._meta.pk})


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
        user = _user_read().first(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
