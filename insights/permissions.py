"""The insights app's part of the access table (studio.permissions): search, slices, clusters and judge alignment,
and the pages of insights/urls.py."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import ALL, LEADS, SEES_BLIND, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
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
    },
    pages={
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
    },
)
