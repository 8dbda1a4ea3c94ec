"""Who may do what: one table of actions (roles, scope, what a refusal says), enforced by studio.access for the
API, the pages and the WebSocket consumers.

Roles are Django groups (annotator, lead, engineer) plus superusers as admin. Project-scoped actions
also need a membership in the project: a user sees only the projects they belong to (admins see all).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum

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


# action -> rule. Every view, page, API view and consumer names one of these; studio.access enforces them.
RULES: dict[str, Rule] = {
    "project.view": Rule(ALL, Scope.MEMBER, gettext_noop("see this project")),
    # Creating a project and changing its settings and members (leads: in their projects).
    "project.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("change projects' settings")),
    "trace.view": Rule(ALL, Scope.MEMBER, gettext_noop("see this trace")),
    "trace.import": Rule(LEADS, Scope.MEMBER, gettext_noop("import traces")),
    # Mending what an import could not find (a trace's blank instruction).
    "trace.edit": Rule(LEADS, Scope.MEMBER, gettext_noop("edit traces")),
    "trace.delete": Rule(LEADS, Scope.MEMBER, gettext_noop("delete traces")),
    "job.view": Rule(ALL, Scope.MEMBER, gettext_noop("see this job")),
    # Rounds: every member sees a project's rounds (and which one a trace is in); leads start new ones.
    "round.view": Rule(ALL, Scope.MEMBER, gettext_noop("see this round")),
    "round.create": Rule(LEADS, Scope.MEMBER, gettext_noop("create rounds")),
    # Annotating: a project's next trace, and one's own annotations only (a lead's too: review is elsewhere).
    "annotation.work": Rule(ANNOTATING, Scope.OWN, gettext_noop("annotate")),
    # The audit history of a trace's annotations: one's own; leads everyone's (agreement needs independent readings).
    "annotation.history": Rule(ALL, Scope.OWN, gettext_noop("see other annotators' history"), unless=LEADS),
    "annotation.review": Rule(LEADS, Scope.MEMBER, gettext_noop("review annotations")),
    # An annotation's saved versions and restoring one (as a new version): its annotator; leads any of their
    # projects'. Whether the answer may change now (its status) is the restore's rule, as for any edit.
    "annotation.versions": Rule(ANNOTATING, Scope.OWN, gettext_noop("see other annotators' versions"), unless=LEADS),
    "annotation.restore": Rule(ANNOTATING, Scope.OWN, gettext_noop("restore other annotators' versions"), unless=LEADS),
    "lease.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("manage other annotators' leases")),
    # The holder closes their own lease (page closed); leads any lease of their projects.
    "lease.release": Rule(ANNOTATING, Scope.OWN, gettext_noop("release this lease"), unless=LEADS),
    # Quality control (annotation.quality): leads mark gold traces (the reference answers), set the bounds, read each
    # annotator's figures and pause a queue; every annotating member sees where they stand with the qualification;
    # a scored answer's comparison with its reference is its annotator's (a qualification answer, once submitted:
    # annotation.quality.selectors.feedback_refusal), and the leads'.
    "gold.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("mark gold traces")),
    "quality.view": Rule(LEADS, Scope.MEMBER, gettext_noop("see annotators' quality")),
    "quality.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("change quality control or pause annotators")),
    "qualification.view": Rule(ANNOTATING, Scope.MEMBER, gettext_noop("see the qualification")),
    "gold.feedback": Rule(ANNOTATING, Scope.OWN, gettext_noop("see other annotators' gold feedback"), unless=LEADS),
    "webhook.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("manage webhooks")),
    "dashboard.view": Rule(LEADS, Scope.MEMBER, gettext_noop("see dashboards")),
    "presence.view": Rule(ANNOTATING, Scope.MEMBER, gettext_noop("see who works on what")),
    "export.view": Rule(EXPORTING, Scope.MEMBER, gettext_noop("see exports")),
    "export.create": Rule(EXPORTING, Scope.MEMBER, gettext_noop("export")),
    "prescore.run": Rule(LEADS, Scope.MEMBER, gettext_noop("run pre-scoring")),
    # Checkpoint evaluation on the accepted corrections (the gpu queue): the people who train and judge checkpoints.
    "evaluation.view": Rule(EXPORTING, Scope.MEMBER, gettext_noop("see checkpoint evaluations")),
    "evaluation.run": Rule(EXPORTING, Scope.MEMBER, gettext_noop("evaluate checkpoints")),
    # In a blind project annotators see no model suggestions (nor a suspicion order); leads and engineers do.
    "prescore.view": Rule(
        ALL, Scope.NOT_BLIND, gettext_noop("see model pre-scoring in this project"), unless=SEES_BLIND
    ),
    # On-policy alternatives at a step: the annotation's annotator, and leads on any annotation of their projects
    # (whether the project is blind is prescore.view's to say, as for suggestions).
    "annotation.alternatives": Rule(
        ANNOTATING, Scope.OWN, gettext_noop("ask the model for alternatives"), unless=LEADS
    ),
    # Search across corrections: every member; annotators find their own corrections only (search.everyone).
    "search.view": Rule(ALL, Scope.MEMBER, gettext_noop("search this project's corrections")),
    "search.everyone": Rule(SEES_BLIND, Scope.MEMBER, gettext_noop("search other annotators' corrections")),
    # Slices (saved searches) and clusters of accepted corrections: the people who study a checkpoint's mistakes.
    "slice.view": Rule(SEES_BLIND, Scope.MEMBER, gettext_noop("see slices and clusters")),
    "slice.manage": Rule(SEES_BLIND, Scope.MEMBER, gettext_noop("save slices and cluster corrections")),
    # Sending a slice's traces back to the annotation queue for another answer: the queue is the leads'.
    "queue.request": Rule(LEADS, Scope.MEMBER, gettext_noop("send traces back to the annotation queue")),
    # Each pre-scoring scorer against the human first errors: it shows pre-scoring, so never to blind annotators.
    "alignment.view": Rule(SEES_BLIND, Scope.MEMBER, gettext_noop("see judge alignment")),
    # Reading the API's own description and the account pages.
    # Replays (docs/runners.md): leads ask for one and cancel it; a runner (a lead's token, like a push) claims,
    # pushes its branch and finishes; every member sees whether a correction was verified.
    "replay.view": Rule(ALL, Scope.MEMBER, gettext_noop("see replays")),
    "replay.request": Rule(LEADS, Scope.MEMBER, gettext_noop("ask for or cancel replays")),
    "replay.run": Rule(LEADS, Scope.MEMBER, gettext_noop("run replays")),
    "api.docs": Rule(ALL, Scope.ANY, gettext_noop("read the API documentation")),
    # Everyone's own settings: the language the studio speaks to them (studio.i18n), how single-key shortcuts work.
    "account.settings": Rule(ALL, Scope.ANY, gettext_noop("change account settings")),
    # Engineers fetch bundles with a token; it is theirs to create and revoke.
    "token.manage": Rule(EXPORTING, Scope.ANY, gettext_noop("manage API tokens")),
    # Django's admin (it checks is_staff itself; the table says who it is for).
    "admin.site": Rule(frozenset({Role.ADMIN}), Scope.ANY, gettext_noop("open the admin site")),
}

# action -> roles allowed, derived from RULES (what the role alone decides).
PERMISSIONS: dict[str, frozenset[Role]] = {action: rule.roles for action, rule in RULES.items()}

# Reachable without logging in (the login page itself, the redirect home, logout, the operator's endpoints).
PUBLIC = "public"

# Pages (function views) by URL name -> action. DRF views declare ``permission_action`` on the class
# instead; a URL with neither fails tests/access/test_access_matrix.py. The login and role part of the action
# is enforced for every page here by PageActionMiddleware; project membership stays in the view.
PAGE_PERMISSIONS: dict[str, str] = {
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
    # traces
    "project-list": "project.view",
    "project-create": "project.manage",
    "project-settings": "project.manage",
    "trace-list": "trace.view",
    "import-upload": "trace.import",
    "round-create": "round.create",
    "import-job": "job.view",
    "import-job-cancel": "trace.import",
    "trace-detail": "trace.view",
    "trace-delete": "trace.delete",
    "trace-instruction": "trace.edit",
    "instructions-upload": "trace.edit",
    "screenshot-file": "trace.view",
    # annotation
    "annotation-queue": "project.view",  # annotators see their queue, leads the open leases
    "annotation-next-trace": "annotation.work",
    "annotation-lease-release": "lease.manage",
    "annotation-workspace": "annotation.work",
    "review-queue": "annotation.review",
    "review-detail": "annotation.review",
    "review-decide": "annotation.review",
    "dashboard": "dashboard.view",
    "project-dashboard": "dashboard.view",
    "round-dashboard": "dashboard.view",
    "review-gold": "gold.manage",
    "project-quality": "quality.manage",
    "qualification-allow": "quality.manage",
    "gold-file": "gold.manage",
    "qualification": "qualification.view",
    "annotation-feedback": "gold.feedback",
    # exports
    "export-home": "export.view",
    "export-job": "export.view",
    "export-job-cancel": "export.create",
    "export-diff": "export.view",
    # evaluation
    "project-evaluations": "evaluation.view",
    "project-evaluations-csv": "evaluation.view",
    # insights
    "search-home": "search.view",
    "project-search": "search.view",
    "project-search-csv": "search.view",
    "project-slices": "slice.view",
    "slice-detail": "slice.view",
    "project-clusters": "slice.view",
    "cluster-run-cancel": "slice.manage",
    "cluster-slice": "slice.manage",
    "cluster-edit": "slice.manage",
    "slice-queue": "queue.request",
    "project-alignment": "alignment.view",
    "project-alignment-csv": "alignment.view",
    # replays
    "replay-queue": "replay.request",
    "replay-policy": "replay.request",
    "project-webhooks": "webhook.manage",
    "webhook-delete": "webhook.manage",
    "webhook-resume": "webhook.manage",
    "webhook-delivery-resend": "webhook.manage",
    "webhook-delivery-cancel": "webhook.manage",
}

# WebSocket routes -> action (the consumer also checks membership per project).
SOCKET_PERMISSIONS: dict[str, str] = {
    "ws/live/": "presence.view",
}


def _group_names(user) -> set[str]:
    """The names of ``user``'s groups in one parameterised query: the related manager's queryset costs the ORM more
    CPU to build than the database spends answering it, once per request."""
    from django.db import connections

    from studio.db import statement_cursor

    alias, sql = _group_names_sql(user._meta.model)
    with statement_cursor(connections[alias]) as cursor:
        cursor.execute(sql, [user.pk])
        return {name for (name,) in cursor.fetchall()}


@functools.cache
def _group_names_sql(user_model) -> tuple[str, str]:
    from django.db import connections, router

    groups = user_model._meta.get_field("groups")
    group = groups.related_model._meta
    through = groups.remote_field.through
    alias = router.db_for_read(through)
    quote = connections[alias].ops.quote_name
    return alias, (
        f"SELECT g.{quote(group.get_field('name').column)} FROM {quote(group.db_table)} g"
        f" JOIN {quote(through._meta.db_table)} m ON m.{quote(groups.m2m_reverse_name())} = g.{quote(group.pk.column)}"
        f" WHERE m.{quote(groups.m2m_column_name())} = %s"
    )


def user_roles(user) -> frozenset[Role]:
    """The user's roles, read once per user object (a request's user: every check of the request asks again)."""
    if not user or not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, "_studio_roles", None)
    if cached is not None:
        return cached
    names = _group_names(user)
    roles = {role for role in GROUP_ROLES if role.value in names}
    if user.is_superuser:
        roles.add(Role.ADMIN)
    user._studio_roles = frozenset(roles)
    return user._studio_roles
