"""An accepted correction becomes a replay request where the project's rule says so (studio.signals): annotation
knows nothing of replays."""

from __future__ import annotations

from django.dispatch import receiver

from replays.services import replay_policy_of, replay_request_create
from studio.signals import correction_accepted


@receiver(correction_accepted)
def correction_accepted_to_replay(sender, annotation, actor=None, **kwargs) -> None:
    if replay_policy_of(annotation.project).every_accepted_correction:
        replay_request_create(annotation=annotation, actor=actor, reason="rule")
