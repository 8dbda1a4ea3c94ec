"""The one place that decides who reaches which object: studio.permissions.RULES applied to rows.

Every view, API view, consumer, selector and service that needs "may this user do this to that" asks here:

- ``access(user, model_or_queryset, pk, action, *, lock=False)`` fetches one object, keeps it only if it lies in
  the action's scope for the user, checks the user's role, and (``lock``) takes its row lock, in one call; an API
  view passes its request instead of the user and names no action: the view's declared one (``permission_action``,
  for the request's method) is the default, so a view names its rule once;
- ``scoped(user, queryset, action)`` narrows a list to what the user reaches for the action;
- ``can(user, action, obj=None)`` answers yes/no for templates, serializers and pages that offer a button.

Two refusals, both studio.errors kinds (so the API, the pages and the sockets answer them as every other error,
from the one kind→status table): ``NotInScope`` (NotFound, 404, "No such <entity> among yours.") when the object
does not exist *or* lies outside the user's reach (another project, someone else's annotation): the same answer for
both, so ids of other projects cannot be enumerated; ``AccessRefused`` (Forbidden, 403, "You cannot <doing>.") when
the object is within reach but the role may not do the action. Their texts are made here and nowhere else. They are
also Django's PermissionDenied / Http404, so one raised outside a view (a middleware) still gets Django's answer.

The app modules (traces/access.py, annotation/access.py, exports/access.py, webhooks/access.py) name the
entities: ``access_<entity>(user, pk, action, *, lock=False)`` (or ``access_<entity>(request, pk)`` in an API view)
and ``<entity>s_for(user, action)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable
from django.http import Http404
from django.utils.translation import gettext, gettext_noop
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from studio.db import OneRowRead
from studio.errors import Forbidden, NotFound
from studio.permissions import RULES, Role, Rule, Scope, user_roles

AnyUser = AbstractBaseUser | AnonymousUser


@dataclass(frozen=True)
class Entity:
    """How the access layer reaches a model's project and owner (Django lookup paths, ``__``-separated)."""

    name: str  # said in a 404: "No such <name> among yours."
    project: str | None  # the path to its project; None: the model is the project
    owner: str | None = None  # the path to the user it belongs to (OWN scope); None: nobody's own


# model label -> entity. A model the layer is asked about and that is missing here is a programming error.
ENTITIES: dict[str, Entity] = {
    "traces.Project": Entity(gettext_noop("project"), None),
    "traces.Trace": Entity(gettext_noop("trace"), "project"),
    "traces.Step": Entity(gettext_noop("step"), "trace__project"),
    "traces.Round": Entity(gettext_noop("round"), "project"),
    "traces.ImportJob": Entity(gettext_noop("import job"), "project"),
    "prescoring.PrescoreJob": Entity(gettext_noop("pre-scoring job"), "project"),
    "annotation.Annotation": Entity(gettext_noop("annotation"), "project", owner="annotator"),
    "annotation.Lease": Entity(gettext_noop("lease"), "trace__project", owner="user"),
    "annotation.AuditEvent": Entity(gettext_noop("history entry"), "project", owner="annotator"),
    "annotation.GoldTrace": Entity(gettext_noop("gold trace"), "project"),
    "annotation.AlternativesJob": Entity(
        gettext_noop("alternatives job"), "annotation__project", owner="annotation__annotator"
    ),
    "exports.ExportJob": Entity(gettext_noop("export"), "project"),
    "evaluation.EvaluationJob": Entity(gettext_noop("evaluation"), "project"),
    "webhooks.Webhook": Entity(gettext_noop("webhook"), "project"),
    "webhooks.Delivery": Entity(gettext_noop("delivery"), "webhook__project"),
    "insights.Slice": Entity(gettext_noop("slice"), "project"),
    "insights.Cluster": Entity(gettext_noop("cluster"), "run__project"),
    "insights.ClusterRun": Entity(gettext_noop("clustering run"), "project"),
    "replays.ReplayRequest": Entity(gettext_noop("replay request"), "project"),
}


class AccessRefused(Forbidden, PermissionDenied):
    """The object is within reach but the user's role may not do the action (the Forbidden kind)."""

    def __init__(self, action: str):
        self.action = action
        super().__init__(refusal(action))


class NotInScope(NotFound, Http404):
    """No such object, or not one the user reaches: one answer for both (the NotFound kind)."""

    def __init__(self, entity: Entity | str):
        self.entity = entity.name if isinstance(entity, Entity) else entity
        # In the request's language (the entity names are in the catalog: gettext_noop above).
        super().__init__(gettext("No such %(entity)s among yours.") % {"entity": gettext(self.entity)})


def refusal(action: str) -> str:
    """The one wording of a refusal: every 403 the studio gives comes from here."""
    return gettext("You cannot %(doing)s.") % {"doing": gettext(RULES[action].doing)}


def entity_of(model: type[Model]) -> Entity:
    return ENTITIES[model._meta.label]


def project_model() -> type[Model]:
    """The project model: the one entity that is its own project (``ENTITIES``), by its label. The access engine
    is platform; it reaches the product's models through its table, never by importing a product app."""
    from django.apps import apps

    (label,) = [label for label, entity in ENTITIES.items() if entity.project is None]
    return apps.get_model(label)


def projects_scoped(user: AnyUser, action: str = "project.view") -> QuerySet[Any]:
    """The projects ``user`` reaches for ``action``."""
    return scoped(user, project_model()._default_manager.all(), action)


def member_projects(user: AnyUser) -> QuerySet[Any]:
    """The projects ``user`` belongs to (admins: all of them)."""
    projects = project_model()._default_manager
    if Role.ADMIN in user_roles(user):
        return projects.all()
    if not getattr(user, "is_authenticated", False):
        return projects.none()
    return projects.filter(memberships__user=user)


def is_member(user: AnyUser, project: Any) -> bool:  # the project model is reached through ENTITIES, never imported
    if Role.ADMIN in user_roles(user):
        return True
    if not getattr(user, "is_authenticated", False):
        return False
    return project.memberships.filter(user_id=user.pk).exists()


def _role_allows(user: AnyUser, rule: Rule) -> bool:
    return bool(user_roles(user) & rule.roles)


def _narrowed(user: AnyUser, rule: Rule) -> bool:
    """Whether OWN / NOT_BLIND narrow the member scope for this user (not for the rule's ``unless`` roles)."""
    return rule.scope in (Scope.OWN, Scope.NOT_BLIND) and not (user_roles(user) & rule.unless)


def _path(entity: Entity, field: str) -> str:
    return field if entity.project is None else f"{entity.project}__{field}"


def _in_projects(user: AnyUser, queryset: QuerySet) -> QuerySet:
    """``queryset`` narrowed to the user's projects (admins: no narrowing)."""
    if Role.ADMIN in user_roles(user):
        return queryset
    entity = entity_of(queryset.model)
    return queryset.filter(**{_path(entity, "pk__in"): member_projects(user).values("pk")})


def _in_scope(user: AnyUser, queryset: QuerySet, rule: Rule) -> QuerySet:
    """``queryset`` narrowed to the rule's scope for ``user`` (the role is checked by the callers)."""
    if rule.scope == Scope.ANY:
        return queryset
    queryset = _in_projects(user, queryset)
    if _narrowed(user, rule):
        entity = entity_of(queryset.model)
        if rule.scope == Scope.OWN and entity.owner is not None:
            queryset = queryset.filter(**{entity.owner: user})
        elif rule.scope == Scope.NOT_BLIND:
            queryset = queryset.filter(**{_path(entity, "blind_prescoring"): False})
    return queryset


def scoped(user: AnyUser, queryset: QuerySet, action: str) -> QuerySet:
    """The rows of ``queryset`` that ``user`` reaches for ``action``; none when the role may not do it at all."""
    rule = RULES[action]  # KeyError on purpose: an unknown action is a programming error
    if not _role_allows(user, rule):
        return queryset.none()
    return _in_scope(user, queryset, rule)


def _walk(obj: Any, path: str) -> Any:
    for name in path.split("__"):
        obj = getattr(obj, name)
    return obj


def project_of(obj: Model) -> Any:
    entity = entity_of(type(obj))
    return obj if entity.project is None else _walk(obj, entity.project)


def _owner_id(obj: Model, entity: Entity) -> int | None:
    assert entity.owner is not None
    *parents, last = entity.owner.split("__")
    holder = _walk(obj, "__".join(parents)) if parents else obj
    return getattr(holder, f"{last}_id")


def _refuse_in_scope(user: AnyUser, obj: Model, action: str) -> None:
    """Raise when ``obj``, already known to lie in one of the user's projects, is not theirs to act on."""
    rule = RULES[action]
    entity = entity_of(type(obj))
    if not _role_allows(user, rule):
        raise AccessRefused(action)
    if not _narrowed(user, rule):
        return
    if rule.scope == Scope.OWN and entity.owner is not None and _owner_id(obj, entity) != user.pk:
        raise NotInScope(entity)  # someone else's: answered as if it did not exist
    if rule.scope == Scope.NOT_BLIND and project_of(obj).blind_prescoring:
        raise AccessRefused(action)


def requester(who: Any, action: str | None) -> tuple[Any, str]:
    """The user and the action of an access call. An API view passes its request and names no action: its declared
    one (``permission_action``, for the request's method) is the default. Every other caller passes the user and
    names the action (a view checking a second action names it too)."""
    if isinstance(who, Request):
        return who.user, action or ActionPermission.action(who, who.parser_context["view"])
    if action is None:
        raise TypeError("an access call for a user names its action; only an API view's request has a default")
    return who, action


def access(
    who: Any, model_or_queryset: type[Model] | QuerySet, pk: Any, action: str | None = None, *, lock: bool = False
) -> Any:
    """Fetch the object ``pk`` for ``action`` (``requester``: ``who`` is a user, or an API view's request whose
    view's action is the default): 404 (NotInScope) outside the user's projects or for someone else's own object,
    403 (AccessRefused) when the role may not; ``lock`` reads it ``select_for_update`` (inside the caller's
    transaction), so the check and the write see the same row."""
    user, action = requester(who, action)
    rule = RULES[action]
    queryset = (
        model_or_queryset if isinstance(model_or_queryset, QuerySet) else model_or_queryset._default_manager.all()
    )
    entity = entity_of(queryset.model)
    # One query, its conditions added in one filter() (each filter() call is a clone and a pass of the ORM's
    # query builder, the bulk of an autosave's CPU): the object, its membership row and (OWN) its owner.
    conditions: dict[str, Any] = {"pk": pk}
    if rule.scope != Scope.ANY and Role.ADMIN not in user_roles(user):
        if not getattr(user, "is_authenticated", False):
            raise NotInScope(entity)
        # A join to the user's membership of the object's project (at most one row: memberships are unique per
        # project and user), not a subquery of all their projects.
        conditions[_path(entity, "memberships__user_id")] = user.pk
    if rule.scope == Scope.OWN and entity.owner and _role_allows(user, rule) and _narrowed(user, rule):
        # Someone else's is a 404 either way; filtering here also keeps ``lock`` off rows that are not theirs.
        conditions[entity.owner] = user.pk
    try:
        obj = _one_row(user, queryset, conditions, lock)
    except (TypeError, ValueError):  # a pk that is no id at all is no object either
        obj = None
    if obj is None:
        raise NotInScope(entity)
    _refuse_in_scope(user, obj, action)
    return obj


# (queryset shape, condition paths, lock) -> the read compiled once per connection (studio.db.OneRowRead).
_READS: dict[tuple, OneRowRead] = {}


def _narrowed_read(queryset: QuerySet, lock: bool, values: dict[str, Any]) -> QuerySet:
    if lock:
        queryset = queryset.select_for_update(of=("self",))
    # No ordering: the conditions leave at most one row, and ``first()``'s ORDER BY costs a compile pass.
    return queryset.filter(**values).order_by()[:1]


def _one_row(user: Any, queryset: QuerySet, conditions: dict[str, Any], lock: bool) -> Any:
    """The one row ``queryset`` narrowed by ``conditions`` reads (locked with ``lock``), or None. The same access
    check of a plain queryset (its model with ``select_related``) is compiled to SQL once and reused: building and
    compiling it was the largest part of an autosave's CPU. ``user`` is ``requester``'s (Any): a condition other
    than ``pk`` names the signed-in user, whose model's pk field is its slot."""
    shape = _plain_shape(queryset)
    if shape is None:
        return next(iter(_narrowed_read(queryset, lock, conditions)), None)
    key = (shape, tuple(conditions), lock)
    read = _READS.get(key)
    if read is None:
        slots = {path: queryset.model._meta.pk if path == "pk" else user._meta.pk for path in conditions}
        read = _READS.setdefault(key, OneRowRead(partial(_narrowed_read, queryset, lock), slots))
    return read.first(**conditions)


def _plain_shape(queryset: Any) -> tuple | None:
    """A key for ``queryset`` when it is its model's rows with nothing but ``select_related`` (what the entity
    modules pass), else None: a filtered, annotated, sliced or prefetching queryset is read by the ORM as given."""
    query = queryset.query
    plain = (
        queryset._iterable_class is ModelIterable
        and not queryset._prefetch_related_lookups
        and not queryset._known_related_objects
        and not queryset._fields
        and not query.where
        and not query.alias_map
        and not query.annotations
        and not query.extra
        and not query.distinct
        and not query.select_for_update
        and not query.combinator
        and not query.values_select
        and query.default_cols
        and query.low_mark == 0
        and query.high_mark is None
        and query.deferred_loading == (frozenset(), True)
    )
    if not plain:
        return None
    return type(queryset), queryset.model, queryset._db, _frozen(query.select_related)


def _frozen(related: Any) -> Any:
    if isinstance(related, dict):
        return tuple(sorted((name, _frozen(inner)) for name, inner in related.items()))
    return related


def can(user: AnyUser, action: str, obj: Model | None = None) -> bool:
    """Whether ``user`` may do ``action`` (to ``obj``, when given: in its project, and theirs where the scope says
    so). Templates, serializers and pages use it to offer or hide what the access layer would refuse."""
    rule = RULES[action]
    if not _role_allows(user, rule):
        return False
    if obj is None or rule.scope == Scope.ANY:
        return True
    if not is_member(user, project_of(obj)):
        return False
    try:
        _refuse_in_scope(user, obj, action)
    except (AccessRefused, NotInScope):
        return False
    return True


def methods_taken(view_class: Any) -> list[str]:
    """The HTTP methods an API view has a handler for (its ``Allow``); HEAD wherever GET is, as Django serves it."""
    names = [m for m in view_class.http_method_names if hasattr(view_class, m)]
    if "get" in names and "head" not in names:
        names.append("head")
    return [m.upper() for m in names]


def method_refused(view_class: Any, method: str) -> bool:
    """True for a method the view has no handler for: answered 405 with its ``Allow``, for every caller alike, before
    any role or object is looked at (a 401 would send a client to log in for a method that cannot work, and a view
    that declares no permission action for it must never be asked for one)."""
    return method.upper() not in methods_taken(view_class)


class ActionPermission(BasePermission):
    """DRF permission: the view names ``permission_action`` (or a dict per HTTP method); the role is checked here,
    the object by the view's ``access_*`` / ``*_for`` call (which answers 404 outside the user's reach). A signed-in
    user the role refuses gets AccessRefused (answered by its kind like every other error); a visitor without a
    session or token is left to DRF, which answers 401."""

    message = "Your role does not allow this."

    @staticmethod
    def action(request: Request, view: Any) -> str:  # Any: a studio view, which declares permission_action
        requested = str(request.method)  # a request that reached a view has its method
        if method_refused(type(view), requested):
            raise MethodNotAllowed(requested)  # PageActionMiddleware answers it first; a view called directly
        declared = view.permission_action
        if isinstance(declared, dict):
            method = "GET" if request.method in ("HEAD", "OPTIONS") else request.method  # reads, as GET is
            declared = declared.get(method, declared.get("*"))
        if not isinstance(declared, str):  # a method the dict leaves out: a programming error, refused loudly
            raise KeyError(f"{type(view).__name__} declares no permission action for {request.method}")
        return declared

    def has_permission(self, request: Request, view: Any) -> bool:
        action = self.action(request, view)
        if can(request.user, action):
            return True
        if getattr(request.user, "is_authenticated", False):
            raise AccessRefused(action)
        self.message = refusal(action)
        return False

    def has_object_permission(self, request: Request, view: Any, obj: Model) -> bool:
        action = self.action(request, view)
        if can(request.user, action, obj):
            return True
        if getattr(request.user, "is_authenticated", False):
            raise AccessRefused(action)
        self.message = refusal(action)
        return False


class AccessedObjectMixin:
    """For DRF generic detail views: ``get_object`` goes through ``access`` with the view's action, so a detail
    answers 404 "No such <entity> among yours." / 403 "You cannot <doing>." as every other view does."""

    def get_object(self) -> Any:  # a row of the view's queryset
        view: Any = self
        lookup = view.lookup_url_kwarg or view.lookup_field
        return access(view.request, view.get_queryset(), view.kwargs[lookup])
