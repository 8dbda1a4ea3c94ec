"""What annotation does when other apps' signals say something happened (connected in ``AnnotationConfig.ready``)."""

from __future__ import annotations

from django.dispatch import receiver

from annotation.quality.rollup import trace_rollup_forget
from studio.signals import trace_deleting


@receiver(trace_deleting)
def trace_deleting_forget_answers(sender, trace, **kwargs) -> None:
    trace_rollup_forget(trace_id=trace.pk)
