"""Signals other apps listen to, so the core never imports them."""

from django.dispatch import Signal

# Sent once when a job reaches succeeded, failed or cancelled, after the transaction that recorded it commits.
# Arguments: ``job`` (the ImportJob / ExportJob / PrescoreJob instance, already in its final state).
job_ended = Signal()
