"""Role users for the demo world, the tests and the benchmarks (the demo itself lives in the top-level `demo/`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from studio.permissions import Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def user_create_with_role(*, username: str, password: str, role: Role, demo: bool = False) -> User:
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.invalid"})
    user.set_password(password)
    user.save()
    # get_or_create: the groups come from a data migration, which a flushed test database no longer has.
    user.groups.add(Group.objects.get_or_create(name=role.value)[0])
    if demo:
        user.groups.add(Group.objects.get_or_create(name="demo")[0])
    return user
