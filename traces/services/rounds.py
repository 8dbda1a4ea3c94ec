"""Writes for rounds: a project's rounds, each the run of the checkpoint that produced its traces."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from studio.errors import Conflict, Invalid
from studio.inputs import input_problem
from traces.models import Project, Round

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ROUND_NAME_MAX: int = Round._meta.get_field("name").max_length or 0
CHECKPOINT_MAX: int = Round._meta.get_field("checkpoint").max_length or 0
WEIGHTS_HASH_MAX: int = Round._meta.get_field("weights_hash").max_length or 0


def round_create(
    *,
    project: Project,
    name: str,
    checkpoint: str,
    weights_hash: str = "",
    ran_at: datetime | None = None,
    actor: User | None = None,
) -> Round:
    """A new round of ``project``: the checkpoint that produced its traces and when it ran (default: now).

    Invalid for a blank or too long name or checkpoint, a weights hash that is no hex digest; Conflict when the
    project already has a round of that name (``round`` in the answer is its id)."""
    name, checkpoint, weights_hash = (name or "").strip(), (checkpoint or "").strip(), (weights_hash or "").strip()
    for field_name, value, limit in (("name", name, ROUND_NAME_MAX), ("checkpoint", checkpoint, CHECKPOINT_MAX)):
        if not value:
            raise Invalid(gettext("%(field)s: give the round's %(field)s") % {"field": field_name}, field=field_name)
        if len(value) > limit:
            raise Invalid(
                gettext("%(field)s: at most %(most)s characters") % {"field": field_name, "most": limit},
                field=field_name,
            )
    problem = input_problem({"name": name, "checkpoint": checkpoint})
    if problem:
        raise Invalid(problem)
    weights_hash = weights_hash.lower()
    if len(weights_hash) > WEIGHTS_HASH_MAX or any(c not in "0123456789abcdef" for c in weights_hash):
        raise Invalid(
            gettext("weights_hash: a hex digest of at most %(most)s digits (sha256 of the weight files)")
            % {"most": WEIGHTS_HASH_MAX},
            field="weights_hash",
        )
    existing = Round.objects.filter(project=project, name=name).first()
    if existing is not None:
        raise Conflict(
            gettext("%(project)s already has a round named %(name)s") % {"project": project.name, "name": repr(name)},
            round=existing.pk,
        )
    try:
        with transaction.atomic():
            return Round.objects.create(
                project=project,
                name=name,
                checkpoint=checkpoint,
                weights_hash=weights_hash,
                ran_at=ran_at or timezone.now(),
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
    except IntegrityError:  # made at the same moment by another request
        existing = Round.objects.get(project=project, name=name)
        raise Conflict(
            gettext("%(project)s already has a round named %(name)s") % {"project": project.name, "name": repr(name)},
            round=existing.pk,
        ) from None
