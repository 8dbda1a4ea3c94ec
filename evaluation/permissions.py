"""The evaluation app's part of the access table (studio.permissions), and the pages of evaluation/urls.py.

Checkpoint evaluation on the accepted corrections (the gpu queue): the people who train and judge checkpoints."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import EXPORTING, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        "evaluation.view": Rule(EXPORTING, Scope.MEMBER, gettext_noop("see checkpoint evaluations")),
        "evaluation.run": Rule(EXPORTING, Scope.MEMBER, gettext_noop("evaluate checkpoints")),
    },
    pages={
        "project-evaluations": "evaluation.view",
        "project-evaluations-csv": "evaluation.view",
    },
)
