"""Quality control's part of the access table (studio.permissions), and the pages of annotation/quality/urls.py.

Leads mark gold traces (the reference answers), set the bounds, read each annotator's figures and pause a queue;
every annotating member sees where they stand with the qualification; a scored answer's comparison with its
reference is its annotator's (a qualification answer, once submitted: annotation.quality.selectors.feedback_refusal),
and the leads'."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import ANNOTATING, LEADS, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        "gold.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("mark gold traces")),
        "quality.view": Rule(LEADS, Scope.MEMBER, gettext_noop("see annotators' quality")),
        "quality.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("change quality control or pause annotators")),
        "qualification.view": Rule(ANNOTATING, Scope.MEMBER, gettext_noop("see the qualification")),
        "gold.feedback": Rule(ANNOTATING, Scope.OWN, gettext_noop("see other annotators' gold feedback"), unless=LEADS),
    },
    pages={
        "review-gold": "gold.manage",
        "project-quality": "quality.manage",
        "qualification-allow": "quality.manage",
        "gold-file": "gold.manage",
        "qualification": "qualification.view",
        "annotation-feedback": "gold.feedback",
    },
)
