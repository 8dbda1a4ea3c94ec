"""The replays app's part of the access table (studio.permissions), and the pages of replays/urls.py.

Replays (docs/runners.md): leads ask for one and cancel it; a runner (a lead's token, like a push) claims, pushes
its branch and finishes; every member sees whether a correction was verified."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import ALL, LEADS, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        "replay.view": Rule(ALL, Scope.MEMBER, gettext_noop("see replays")),
        "replay.request": Rule(LEADS, Scope.MEMBER, gettext_noop("ask for or cancel replays")),
        "replay.run": Rule(LEADS, Scope.MEMBER, gettext_noop("run replays")),
    },
    pages={
        "replay-queue": "replay.request",
        "replay-policy": "replay.request",
    },
)
