"""The search index follows every annotation save (drafts, submits, reviews all save the model), in the save's own
transaction: the entry commits, or rolls back, with the answer it copies."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from annotation.models import Annotation


@receiver(post_save, sender=Annotation, dispatch_uid="insights-search-entry")
def annotation_saved(sender, instance: Annotation, **kwargs) -> None:
    from insights.services import search_entry_refresh

    search_entry_refresh(annotation_id=instance.pk)
