"""Who may do what: one table of actions (roles, scope, what a refusal says), enforced by studio.access for the
API, the pages and the WebSocket consumers. Each app declares its part beside its ``urls.py`` (``<app>/permissions.py``,
an ``AppAccess`` named ``ACCESS``: its actions, its pages, its sockets); the studio's own part is ``ACCESS`` here, and
``access_gather`` makes the one table of them all when the studio app is ready.

Roles are Django groups (annotator, lead, engineer) plus superusers as admin. Project-scoped actions
also need a membership in the project: a user sees only the projects they belong to (admins see all).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import import_module
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import module_has_submodule

from studio.catalog import gettext_noop


class Role(StrEnum):
    ANNOTATOR = "annotator"
    LEAD = "lead"
    ENGINEER = "engineer"
    ADMIN = "admin"


GROUP_ROLES = (Role.ANNOTATOR, Role.LEAD, Role.ENGINEER)

ALL = frozenset(Role)
LEADS = frozenset({Role.LEAD, Role.ADMIN})
ANNOTATING = frozenset({Role.ANNOTATOR, Role.LEAD, Role.ADMIN})
EXPORTING = frozenset({Role.ENGINEER, Role.LEAD, Role.ADMIN})
SEES_BLIND = frozenset({Role.LEAD, Role.ENGINEER, Role.ADMIN})


class Scope(StrEnum):
    """Which objects of an action a role reaches (studio.access applies it; its ENTITIES say where each model's
    project and owner are)."""

    ANY = "any"  # no object, or every object: the role alone decides (the admin site, one's API token)
    MEMBER = "member"  # objects of projects the user belongs to (admins belong to all)
    OWN = "own"  # a member's own annotation / lease; objects without an owner (a project) fall back to MEMBER
    NOT_BLIND = "not-blind"  # MEMBER, and the project does not hide model pre-scoring from annotators


@dataclass(frozen=True)
class Rule:
    roles: frozenset[Role]
    scope: Scope
    # What the refusal says the user cannot do: "You cannot <doing>." (studio.access.AccessRefused).
    doing: str
    # Roles for which OWN / NOT_BLIND narrow nothing: they reach every object of their projects (leads release
    # anyone's lease, see everyone's history and see pre-scoring in a blind project).
    unless: frozenset[Role] = field(default_factory=frozenset)


@dataclass(frozen=True)
class AppAccess:
    """One app's part of the access table, declared as ``ACCESS`` in the ``permissions`` module beside its
    ``urls.py``: its actions' rules, its pages by URL name (the names its ``urls.py`` gives) and its WebSocket routes.
    A page or route may name an action another app declares (an app's pages are of a project: ``project.view``)."""

    rules: dict[str, Rule] = field(default_factory=dict)
    # URL name -> action, for pages (function views). DRF views declare ``permission_action`` on the class instead;
    # a URL with neither fails tests/access/test_access_matrix.py. The login and role part of the action is enforced
    # for every page by PageActionMiddleware; project membership stays in the view.
    pages: dict[str, str] = field(default_factory=dict)
    # WebSocket route -> action (the consumer also checks membership per project).
    sockets: dict[str, str] = field(default_factory=dict)

    def joined(self, *others: AppAccess) -> AppAccess:
        """This part with ``others`` (an app's sub-packages' parts, each beside its own ``urls.py``)."""
        whole = AppAccess(dict(self.rules), dict(self.pages), dict(self.sockets))
        for other in others:
            for table, more in ((whole.rules, other.rules), (whole.pages, other.pages), (whole.sockets, other.sockets)):
                _add_once(table, more, "an app")
        return whole


# Reachable without logging in (the login page itself, the redirect home, logout, the operator's endpoints).
PUBLIC = "public"

# The studio's own part: its pages (studio/urls.py) and the actions no app owns.
ACCESS = AppAccess(
    rules={
        # Reading the API's own description.
        "api.docs": Rule(ALL, Scope.ANY, gettext_noop("read the API documentation")),
        # Everyone's own settings: the language the studio speaks to them (studio.i18n), how single-key shortcuts
        # work.
        "account.settings": Rule(ALL, Scope.ANY, gettext_noop("change account settings")),
        # Engineers fetch bundles with a token; it is theirs to create and revoke.
        "token.manage": Rule(EXPORTING, Scope.ANY, gettext_noop("manage API tokens")),
        # Django's admin (it checks is_staff itself; the table says who it is for).
        "admin.site": Rule(frozenset({Role.ADMIN}), Scope.ANY, gettext_noop("open the admin site")),
    },
    pages={
        "home": PUBLIC,
        "login": PUBLIC,
        "logout": PUBLIC,
        "oidc-start": PUBLIC,
        "oidc-callback": PUBLIC,
        "admin-login": PUBLIC,
        # The operator's endpoints ask for no login: the healthchecks and Prometheus have none. /metrics is served to
        # the addresses STUDIO_METRICS_ALLOW lists (studio.views.metrics), and the public proxy does not pass it.
        "healthz": PUBLIC,
        "readyz": PUBLIC,
        "metrics": PUBLIC,
        "api-schema": "api.docs",
        "api-docs": "api.docs",
        "account-settings": "account.settings",
        "account-token": "token.manage",
        # The pages' scripts' translations (Django's JavaScript catalog): the login page's scripts need them too.
        "javascript-catalog": PUBLIC,
        "api-token": "token.manage",
    },
)

# The one table at run time, gathered from every installed app's ``permissions.ACCESS`` (``access_gather``, when
# the studio app is ready). action -> rule: every view, page, API view and consumer names one of these;
# studio.access enforces them.
RULES: dict[str, Rule] = {}
# action -> roles allowed, derived from RULES (what the role alone decides).
PERMISSIONS: dict[str, frozenset[Role]] = {}
# Pages by URL name -> action (AppAccess.pages, every app's).
PAGE_PERMISSIONS: dict[str, str] = {}
# WebSocket routes -> action (AppAccess.sockets, every app's).
SOCKET_PERMISSIONS: dict[str, str] = {}


def _add_once(table: dict[str, Any], more: dict[str, Any], where: str) -> None:
    """``more`` into ``table``; a name both declare is refused: an action or a page has one rule."""
    twice = sorted(set(table) & set(more))
    if twice:
        raise ImproperlyConfigured(f"{where} declares access rules already declared: {', '.join(twice)}")
    table.update(more)


def apps_access() -> list[tuple[str, AppAccess]]:
    """Each installed app's part of the table (its ``permissions.ACCESS``), by app label, in INSTALLED_APPS order.
    Found as Django finds admin modules, so the studio imports no app (tests/architecture/test_import_graph.py)."""
    from django.apps import apps

    parts = []
    for config in apps.get_app_configs():
        if not module_has_submodule(config.module, "permissions"):
            continue
        declared = getattr(import_module(f"{config.name}.permissions"), "ACCESS", None)
        if isinstance(declared, AppAccess):
            parts.append((config.label, declared))
    return parts


def access_gather(parts: list[tuple[str, AppAccess]] | None = None) -> None:
    """Fill RULES, PERMISSIONS, PAGE_PERMISSIONS and SOCKET_PERMISSIONS (in place: importers hold these dicts) from
    ``parts`` (default: every installed app's). Called once, from the studio app's ready()."""
    rules: dict[str, Rule] = {}
    pages: dict[str, str] = {}
    sockets: dict[str, str] = {}
    for label, part in apps_access() if parts is None else parts:
        _add_once(rules, part.rules, label)
        _add_once(pages, part.pages, label)
        _add_once(sockets, part.sockets, label)
    _replace(RULES, rules)
    _replace(PAGE_PERMISSIONS, pages)
    _replace(SOCKET_PERMISSIONS, sockets)
    _replace(PERMISSIONS, {action: rule.roles for action, rule in RULES.items()})


def _replace(table: dict[str, Any], gathered: dict[str, Any]) -> None:
    table.clear()
    table.update(gathered)


def _group_names(user: Any) -> set[str]:
    """The names of ``user``'s groups in one parameterised query: the related manager's queryset costs the ORM more
    CPU to build than the database spends answering it, once per request."""
    from django.db import connections

    from studio.db import statement_cursor

    alias, sql = _group_names_sql(user._meta.model)
    with statement_cursor(connections[alias]) as cursor:
        cursor.execute(sql, [user.pk])
        return {name for (name,) in cursor.fetchall()}


def _group_names_from(user_model: Any, quote: Any) -> tuple[str, str]:
    """The group name's column and the rest of a read of one user's group names, up to the user's id it ends on:
    ``SELECT <column><rest><the user's id>``."""
    groups = user_model._meta.get_field("groups")
    group = groups.related_model._meta
    through = groups.remote_field.through
    return f"g.{quote(group.get_field('name').column)}", (
        f" FROM {quote(group.db_table)} g"
        f" JOIN {quote(through._meta.db_table)} m ON m.{quote(groups.m2m_reverse_name())} = g.{quote(group.pk.column)}"
        f" WHERE m.{quote(groups.m2m_column_name())} = "
    )


@functools.cache
def _group_names_sql(user_model: Any) -> tuple[str, str]:
    from django.db import connections, router

    alias = router.db_for_read(user_model._meta.get_field("groups").remote_field.through)
    name, rest = _group_names_from(user_model, connections[alias].ops.quote_name)
    return alias, f"SELECT {name}{rest}%s"


# The attribute the signed-in user's read (studio.auth_backend) puts its group names in: a JSON list of texts.
GROUP_NAMES_READ = "studio_group_names"


def group_names_column(user_model: Any, vendor: str) -> str | None:
    """SQL for one more column of a read of ``user_model``'s rows: the row's user's group names as a JSON list, so
    the user and their roles come in one query (None where the database has no JSON aggregate here)."""
    from django.db import connections, router

    aggregate = {"postgresql": "COALESCE(json_agg({name}), '[]')::text", "sqlite": "json_group_array({name})"}.get(
        vendor
    )
    if aggregate is None:
        return None
    through = user_model._meta.get_field("groups").remote_field.through
    quote = connections[router.db_for_read(through)].ops.quote_name
    name, rest = _group_names_from(user_model, quote)
    user_pk = f"{quote(user_model._meta.db_table)}.{quote(user_model._meta.pk.column)}"
    return f"(SELECT {aggregate.format(name=name)}{rest}{user_pk})"


def user_roles(user: Any) -> frozenset[Role]:
    """The user's roles, read once per user object (a request's user: every check of the request asks again). The
    signed-in user's read brings their group names along (``GROUP_NAMES_READ``): then nothing more is read."""
    if not user or not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, "_studio_roles", None)
    if cached is not None:
        return cached
    read_along = user.__dict__.pop(GROUP_NAMES_READ, None)
    names = _group_names(user) if read_along is None else set(json.loads(read_along))
    roles = {role for role in GROUP_ROLES if role.value in names}
    if user.is_superuser:
        roles.add(Role.ADMIN)
    user._studio_roles = frozenset(roles)
    return user._studio_roles
