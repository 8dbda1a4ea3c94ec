"""The conflicts and refusals an annotation write can meet (each a kind of ``studio.errors``)."""

from __future__ import annotations

from annotation.models import Annotation
from annotation.selectors import annotation_json
from studio.errors import Conflict, Invalid


class StaleVersion(Conflict):
    """The edit was based on an older version: ``current`` (the annotation as it is now, the workspace's JSON)
    and ``current_version`` travel in the body, as review's ReviewConflict carries ``current_version``."""


class NotEditable(Conflict):
    """The annotation is no longer the annotator's to change (submitted, accepted)."""


class LeaseLost(Conflict):
    """The lease was released by a lead, or expired and another annotator took the trace."""


class SkipRefused(Conflict):
    """This answer is not skipped (a qualification trace: ``quality.skip_refusal`` says why)."""


class SubmitRejected(Invalid):
    """The annotation is not complete; ``errors`` maps each field to what it still needs."""


def _conflict_fields(annotation: Annotation) -> dict:
    return {"current": annotation_json(annotation), "current_version": annotation.version}


# --- Leases: handing out traces --------------------------------------------------------------
