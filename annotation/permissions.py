"""The annotation app's part of the access table (studio.permissions): annotating, leases, history, versions, the
live socket and the pages of annotation/urls.py; with its review and quality rooms' parts, each beside their own
``urls.py``."""

from __future__ import annotations

from annotation.quality.permissions import ACCESS as QUALITY_ACCESS
from annotation.review.permissions import ACCESS as REVIEW_ACCESS
from studio.catalog import gettext_noop
from studio.permissions import ALL, ANNOTATING, LEADS, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        # Annotating: a project's next trace, and one's own annotations only (a lead's too: review is elsewhere).
        "annotation.work": Rule(ANNOTATING, Scope.OWN, gettext_noop("annotate")),
        # The audit history of a trace's annotations: one's own; leads everyone's (agreement needs independent
        # readings).
        "annotation.history": Rule(ALL, Scope.OWN, gettext_noop("see other annotators' history"), unless=LEADS),
        # An annotation's saved versions and restoring one (as a new version): its annotator; leads any of their
        # projects'. Whether the answer may change now (its status) is the restore's rule, as for any edit.
        "annotation.versions": Rule(
            ANNOTATING, Scope.OWN, gettext_noop("see other annotators' versions"), unless=LEADS
        ),
        "annotation.restore": Rule(
            ANNOTATING, Scope.OWN, gettext_noop("restore other annotators' versions"), unless=LEADS
        ),
        "lease.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("manage other annotators' leases")),
        # The holder closes their own lease (page closed); leads any lease of their projects.
        "lease.release": Rule(ANNOTATING, Scope.OWN, gettext_noop("release this lease"), unless=LEADS),
        "presence.view": Rule(ANNOTATING, Scope.MEMBER, gettext_noop("see who works on what")),
        # On-policy alternatives at a step: the annotation's annotator, and leads on any annotation of their projects
        # (whether the project is blind is prescore.view's to say, as for suggestions).
        "annotation.alternatives": Rule(
            ANNOTATING, Scope.OWN, gettext_noop("ask the model for alternatives"), unless=LEADS
        ),
    },
    pages={
        "annotation-queue": "project.view",  # annotators see their queue, leads the open leases
        "annotation-next-trace": "annotation.work",
        "annotation-lease-release": "lease.manage",
        "annotation-workspace": "annotation.work",
    },
    sockets={"ws/live/": "presence.view"},  # annotation/routing.py
).joined(REVIEW_ACCESS, QUALITY_ACCESS)
