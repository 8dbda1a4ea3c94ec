"""An accepted correction becomes a replay request where the project's rule says so (studio.signals): annotation
knows nothing of replays."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from replays.services import replay_policy_of, replay_request_create, replays_time_out
from studio.errors import Invalid
from studio.signals import correction_accepted, watchdog_passed

log = logging.getLogger(__name__)


@receiver(correction_accepted)
def correction_accepted_to_replay(sender, annotation, actor=None, **kwargs) -> None:
    if not replay_policy_of(annotation.project).every_accepted_correction:
        return
    try:
        replay_request_create(annotation=annotation, actor=actor, reason="rule")
    except Invalid as exc:  # the accept is committed; a correction that cannot be replayed is said in the log
        log.warning("no replay of annotation %s: %s", annotation.pk, exc.detail)


@receiver(watchdog_passed)
def replays_past_their_deadline(sender, **kwargs) -> None:
    """Requests no runner claims end at their deadline too (a claim also ends them, at each poll)."""
    ended = replays_time_out()
    if ended:
        log.info("%s replay requests timed out", ended)
