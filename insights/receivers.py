"""The search index follows every save of a handed-in annotation (a submit, a review, an edit of a rejected answer),
in the save's own transaction: the entry commits, or rolls back, with the answer it copies. A draft is not indexed
until it is submitted (no answer goes back to draft): its autosaves, every two seconds while an annotator types,
are the hot path a save's few milliseconds are measured on, and a search finds corrections handed in."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from annotation.models import Annotation, AnnotationStatus
from traces.models import Trace

# What an entry copies from its trace: the instruction (searched), the metadata (platform, app or site) and the round.
TRACE_FIELDS_INDEXED = frozenset({"instruction", "metadata", "round"})


@receiver(post_save, sender=Annotation, dispatch_uid="insights-search-entry")
def annotation_saved(sender, instance: Annotation, **kwargs) -> None:
    if instance.status == AnnotationStatus.DRAFT:
        return
    from insights.services import search_entry_refresh

    search_entry_refresh(annotation_id=instance.pk)


@receiver(post_save, sender=Trace, dispatch_uid="insights-trace-fields")
def trace_saved(sender, instance: Trace, created: bool, update_fields=None, **kwargs) -> None:
    """A lead mends a trace's instruction (one page or a bulk file), or its round or metadata change: its answers'
    entries follow. A new trace has no answers yet."""
    if created or (update_fields is not None and not TRACE_FIELDS_INDEXED & set(update_fields)):
        return
    from insights.services import search_entry_refresh

    handed_in = Annotation.objects.filter(trace_id=instance.pk).exclude(status=AnnotationStatus.DRAFT)
    for pk in handed_in.values_list("pk", flat=True):
        search_entry_refresh(annotation_id=pk)
