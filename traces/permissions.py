"""The traces app's part of the access table (studio.permissions): projects, traces, their imports and rounds, and
the pages of traces/urls.py."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import ALL, LEADS, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
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
    },
    pages={
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
    },
)
