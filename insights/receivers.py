"""The search index follows every save of a handed-in annotation (a submit, a review, an edit of a rejected answer),
in the save's own transaction: the entry commits, or rolls back, with the answer it copies. A draft is not indexed
until it is submitted (no answer goes back to draft): its autosaves, every two seconds while an annotator types,
are the hot path a save's few milliseconds are measured on, and a search finds corrections handed in."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from annotation.models import Annotation, AnnotationStatus


@receiver(post_save, sender=Annotation, dispatch_uid="insights-search-entry")
def annotation_saved(sender, instance: Annotation, **kwargs) -> None:
    if instance.status == AnnotationStatus.DRAFT:
        return
    from insights.services import search_entry_refresh

    search_entry_refresh(annotation_id=instance.pk)
