"""Signals other apps listen to, so the core never imports them."""

from django.dispatch import Signal

# Sent once when a job reaches succeeded, failed or cancelled, after the transaction that recorded it commits.
# Arguments: ``job`` (the ImportJob / ExportJob / PrescoreJob instance, already in its final state).
job_ended = Signal()

# Sent once per round, when the last of its traces gets an accepted answer, after that commit.
# Arguments: ``round`` (traces.models.Round, its ``annotated_at`` set).
round_annotated = Signal()

# Sent once when an answer that corrects a step (verdict "error" with a corrected action) is accepted, after that
# commit. Arguments: ``annotation`` (annotation.models.Annotation, accepted), ``actor`` (who accepted it).
correction_accepted = Signal()

# Sent by every worker's job watchdog after each of its passes (studio.jobs.watchdog_start), so an app's own deadlines
# are kept without a scheduler of their own. No arguments.
watchdog_passed = Signal()

# Sent by traces.services.trace_delete in its transaction, just before the trace and its answers are deleted (apps
# that keep counts of its answers take them off). Arguments: ``trace`` (traces.models.Trace).
trace_deleting = Signal()
