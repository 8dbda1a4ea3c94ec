"""Leases: who holds which trace now (claim the next trace, heartbeat, release), and the time credited to them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from annotation import events
from annotation.access import access_lease
from annotation.models import Annotation, AnnotationKind, AnnotationStatus, GoldTrace, Lease, QueueRequest
from annotation.overlap import quota_bound, trace_annotation_quota
from annotation.quality import services as quality
from annotation.quality.selectors import quality_settings
from annotation.services.errors import LeaseLost
from studio.access import can
from studio.db import atomic_with_retry
from traces.models import Trace
from traces.selectors import traces_ready_to_annotate

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.models import QualificationAttempt, QualitySettings
    from traces.models import Project

# The words a message names a state by, for the catalog (the messages translate them when raised).
gettext_noop("released")
gettext_noop("closed")
gettext_noop("released-by-lead")
gettext_noop("expired")
gettext_noop("skipped")


HEARTBEAT_CREDIT_CAP_S = 90


def _trace_occupancy(*, trace_id: int, user: User, now: datetime) -> int:
    """Annotators other than ``user`` who hold the trace: finished work plus live leases."""
    finished = (
        Annotation.objects.filter(trace_id=trace_id)
        .exclude(annotator=user)
        .exclude(status=AnnotationStatus.DRAFT)
        .values("annotator_id")
    )
    leased = (
        Lease.objects.filter(trace_id=trace_id, released_at__isnull=True, expires_at__gt=now)
        .exclude(user=user)
        .exclude(user_id__in=finished)
        .values("user_id")
    )
    return finished.count() + leased.distinct().count()


def _lease_take(*, trace: Trace, user: User, now: datetime, page: str = "") -> Lease:
    """Open (or renew this user's unreleased) lease on ``trace``, held by workspace ``page`` when one is given;
    the caller holds the trace lock."""
    expires = now + timedelta(minutes=trace.project.lease_idle_minutes)
    lease = Lease.objects.filter(trace=trace, user=user, released_at__isnull=True).first()
    if lease is None:
        lease = Lease.objects.create(trace=trace, user=user, heartbeat_at=now, expires_at=expires, page=page)
        events.lease_changed(lease=lease, state="open")
        return lease
    lease.heartbeat_at, lease.expires_at = now, expires
    lease.page = page or lease.page
    lease.save(update_fields=["heartbeat_at", "expires_at", "page"])
    return lease


def _annotation_for_claim(
    *, trace: Trace, user: User, kind: str = AnnotationKind.PRODUCTION, counted: bool = False
) -> Annotation:
    """The user's annotation of ``trace`` (made now, of ``kind``, if new). ``counted``: a new one counts in the
    annotator's tally of new traces, which decides where their next gold trace falls (quality.gold_slot_due; counted
    while the project hands out gold)."""
    annotation, created = Annotation.objects.get_or_create(
        trace=trace, annotator=user, defaults={"project_id": trace.project_id, "kind": kind}
    )
    if created and counted:
        quality.queue_tally_bump(user=user, project=trace.project)
    return annotation


def _lock_trace(trace_id: int) -> Trace | None:
    """Lock one trace row; None when another transaction holds it (PostgreSQL skips it, SQLite
    needs no row lock: its IMMEDIATE transactions already let one writer in at a time)."""
    return (
        Trace.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("project")
        .filter(pk=trace_id)
        .first()
    )


@atomic_with_retry
def lease_next_trace(
    *, user: User, project: Project, most_doubtful_first: bool = False
) -> tuple[Annotation, Lease] | None:
    """Hand ``user`` their next trace of ``project`` with a lease, or None when nothing is open to them.

    Order: a trace they already hold, then their unfinished drafts, then fresh traces by id (or, with
    ``most_doubtful_first``, where the user sees pre-scoring — ``prescore.view`` —, by suspicion). A trace
    is open while fewer distinct annotators hold it than its quota; the quota is re-checked after
    the row lock, with a fresh statement, so two concurrent claimers never share a trace by accident.

    Quality control (``annotation.quality``) comes first: a paused queue or a failed qualification gives nothing
    (``QueueClosed``, a 409 whose ``gate`` the page reads); a member qualifying is given the qualification's gold
    traces; an unfinished gold answer is resumed; and one new trace in the project's ``gold_every`` is a gold
    trace they never met (deterministic per annotator). Gold traces never go out as production work.
    """
    now = timezone.now()
    settings = quality_settings(project)  # read once for the gate and the gold slot
    attempt = quality.queue_gate(user=user, project=project, settings=settings)
    held = (
        Lease.objects.filter(user=user, trace__project=project, released_at__isnull=True, expires_at__gt=now)
        .order_by("created_at")
        .first()
    )
    if held is not None:
        trace = Trace.objects.select_related("project").get(pk=held.trace_id)
        return _annotation_for_claim(trace=trace, user=user), _lease_take(trace=trace, user=user, now=now)
    gold_claim = _gold_claim(user=user, project=project, attempt=attempt, settings=settings, now=now)
    if gold_claim is not None or attempt is not None:
        return gold_claim

    finished_by_me = Annotation.objects.filter(annotator=user).exclude(status=AnnotationStatus.DRAFT).values("trace_id")
    skipped_by_me = Lease.objects.filter(user=user, release_reason="skipped").values("trace_id")
    my_draft = Exists(Annotation.objects.filter(trace=OuterRef("pk"), annotator=user, status=AnnotationStatus.DRAFT))
    busy = Subquery(
        Lease.objects.filter(trace=OuterRef("pk"), released_at__isnull=True, expires_at__gt=now)
        .exclude(user=user)
        .values("trace")
        .annotate(n=Count("user", distinct=True))
        .values("n")[:1]
    )
    done = Subquery(
        Annotation.objects.filter(trace=OuterRef("pk"))
        .exclude(annotator=user)
        .exclude(status=AnnotationStatus.DRAFT)
        .values("trace")
        .annotate(n=Count("annotator", distinct=True))
        .values("n")[:1]
    )
    requested = Exists(QueueRequest.objects.filter(trace=OuterRef("pk")))
    open_traces: QuerySet[Any] = (
        # Traces awaiting their instruction stay out until a lead writes it (traces.selectors).
        traces_ready_to_annotate(Trace.objects.filter(project=project))
        # Gold traces go out only as gold (_gold_claim), scored, never as production work.
        .exclude(Exists(GoldTrace.objects.filter(trace=OuterRef("pk"))))
        .exclude(pk__in=finished_by_me)
        .exclude(pk__in=skipped_by_me)
        .annotate(held_by=Coalesce(busy, 0) + Coalesce(done, 0), mine=my_draft, requested=requested)
        .annotate(quota_bound=quota_bound(project))
        .filter(held_by__lt=F("quota_bound"))
    )
    # A trace a lead sent back to the queue comes first, after the user's own drafts.
    ordering: tuple[Any, ...]
    if most_doubtful_first and can(user, "prescore.view", project):
        from prescoring.selectors import traces_by_suspicion

        ordering = ("-mine", "-requested", F("suspicion").desc(nulls_last=True), "id")
        open_traces = traces_by_suspicion(open_traces, user=user)
    else:
        ordering = ("-mine", "-requested", "id")
    candidates = open_traces.order_by(*ordering).values_list("pk", flat=True)
    offset, chunk = 0, 100
    while True:
        batch = list(candidates[offset : offset + chunk])
        for trace_id in batch:
            quota = trace_annotation_quota(trace_id=trace_id, project=project)
            locked = _lock_trace(trace_id)
            if locked is None:
                continue  # another claimer holds it right now
            trace = locked
            if _trace_occupancy(trace_id=trace_id, user=user, now=now) >= quota:
                continue
            annotation = _annotation_for_claim(trace=trace, user=user, counted=bool(settings.gold_every))
            return annotation, _lease_take(trace=trace, user=user, now=now)
        if len(batch) < chunk:
            return None
        offset += chunk


def _gold_claim(
    *, user: User, project: Project, attempt: QualificationAttempt | None, settings: QualitySettings, now: datetime
) -> tuple[Annotation, Lease] | None:
    """The hand-out's gold: the user's unfinished gold or qualification answer; while qualifying (``attempt``) the
    attempt's next gold trace; else, when no draft of theirs waits and their next new trace is due to be gold, a
    gold trace they never met. None: the production queue decides. A project that hands out no gold costs nothing
    here (an unfinished gold answer from before gold was turned off stays on the queue page's drafts)."""
    if attempt is None and not settings.gold_every:
        return None
    draft = quality.own_first_draft(user=user, project=project)
    if draft is not None and draft.kind != AnnotationKind.PRODUCTION:
        return draft, _lease_take(trace=draft.trace, user=user, now=now)
    if attempt is not None:
        kind = AnnotationKind.QUALIFICATION
    elif draft is not None:
        return None  # their own drafts come first, in the production order
    elif quality.gold_slot_due(user=user, project=project, settings=settings):
        kind = AnnotationKind.GOLD
    else:
        return None
    trace = quality.gold_trace_pick(user=user, project=project)
    if trace is None and attempt is not None:
        raise quality.QueueClosed(
            gettext("Too few gold traces are left for your qualification in %(project)s: a lead needs to mark more.")
            % {"project": project.name},
            gate="qualification_unavailable",
        )
    if trace is None:
        return None  # no gold left to them: the production queue goes on
    counted = kind == AnnotationKind.GOLD
    return (
        _annotation_for_claim(trace=trace, user=user, kind=kind, counted=counted),
        _lease_take(trace=trace, user=user, now=now),
    )


@atomic_with_retry
def lease_take_for_annotation(*, annotation: Annotation, user: User, page: str = "") -> Lease | None:
    """Opening one's own annotation (e.g. work sent back by review) takes the lease if the trace is free; ``page``
    names the workspace page that holds it from now on."""
    now = timezone.now()
    trace = Trace.objects.select_for_update(of=("self",)).select_related("project").get(pk=annotation.trace_id)
    quota = trace_annotation_quota(trace_id=trace.pk, project=trace.project)
    mine = Lease.objects.filter(trace=trace, user=user, released_at__isnull=True, expires_at__gt=now).exists()
    if (
        not mine
        and annotation.status == AnnotationStatus.DRAFT
        # A gold trace has no quota: every annotator who is handed it answers it.
        and annotation.kind == AnnotationKind.PRODUCTION
        and _trace_occupancy(trace_id=trace.pk, user=user, now=now) >= quota
    ):
        return None
    return _lease_take(trace=trace, user=user, now=now, page=page)


def _lease_close(lease: Lease, *, by: User | None, reason: str, now: datetime) -> None:
    lease.released_at, lease.released_by, lease.release_reason = now, by, reason
    lease.save(update_fields=["released_at", "released_by", "release_reason"])
    events.lease_changed(lease=lease, state="released")


def _credit_time(*, lease: Lease, now: datetime) -> None:
    """Add the time since the last heartbeat (capped: a sleeping laptop is not work) to the annotation."""
    gap = max(0, min((now - lease.heartbeat_at).total_seconds(), HEARTBEAT_CREDIT_CAP_S))
    if gap:
        Annotation.objects.filter(trace_id=lease.trace_id, annotator_id=lease.user_id).update(
            time_spent_s=F("time_spent_s") + int(round(gap))
        )


@atomic_with_retry
def lease_heartbeat(*, lease_id: int, user: User) -> Lease:
    """Renew the user's lease and credit the active time; a lease released by a lead or taken over is lost."""
    now = timezone.now()
    lease = access_lease(user, lease_id, "annotation.work", lock=True)  # one's own lease: 404 for anyone else's
    if lease.released_at is not None:
        by = lease.released_by
        reason = gettext(lease.release_reason or "released")
        raise LeaseLost(
            (
                gettext("Your lease on this trace was released by %(lead)s (%(reason)s).")
                % {"lead": by.username, "reason": reason}
                if by is not None and by.pk != user.pk
                else gettext("Your lease on this trace was released (%(reason)s).") % {"reason": reason}
            )
            + " "
            + gettext("Your draft is kept; open the trace again from the queue."),
            reason=lease.release_reason,
        )
    if lease.expires_at <= now:
        quota = trace_annotation_quota(trace_id=lease.trace_id, project=lease.trace.project)
        gold = GoldTrace.objects.filter(trace_id=lease.trace_id).exists()  # no quota: nobody takes a gold trace over
        if not gold and _trace_occupancy(trace_id=lease.trace_id, user=user, now=now) >= quota:
            _lease_close(lease, by=None, reason="expired", now=now)
            raise LeaseLost(
                gettext("Your lease expired and another annotator took the trace. Your draft is kept."),
                reason="expired",
            )
    else:
        _credit_time(lease=lease, now=now)
    lease.heartbeat_at = now
    lease.expires_at = now + timedelta(minutes=lease.trace.project.lease_idle_minutes)
    lease.save(update_fields=["heartbeat_at", "expires_at"])
    return lease


@atomic_with_retry
def lease_release_by(*, actor: User, lease_id: int, action: str, page: str = "") -> Lease:
    """The one way a person closes a lease: the holder's page going away (the API, its pagehide beacon), a lead
    from the queue page or from the live list (the socket). ``action`` is the entry point's rule (``lease.release``:
    one's own, leads any of their projects'; ``lease.manage``: leads only), applied by the access layer on the
    locked row: 404 outside the actor's reach, 403 for a role that may not.

    An already released lease is answered as it stands, unchanged, whichever entry point asks. A holder's page
    that names itself (``page``) closes the lease only if that page still holds it: after a reload the old page's
    farewell arrives when the new page has taken the lease over."""
    lease = access_lease(actor, lease_id, action, lock=True)
    holder = lease.user_id == actor.pk
    if holder and page and lease.page and page != lease.page:
        return lease
    if lease.released_at is None:
        now = timezone.now()
        if holder and lease.expires_at > now:
            _credit_time(lease=lease, now=now)
        _lease_close(lease, by=actor, reason="closed" if holder else "released-by-lead", now=now)
    return lease


def _release_user_leases(*, trace_id: int, user: User, reason: str, now: datetime) -> None:
    for lease in Lease.objects.select_for_update().filter(trace_id=trace_id, user=user, released_at__isnull=True):
        if lease.expires_at > now:
            _credit_time(lease=lease, now=now)
        _lease_close(lease, by=user, reason=reason, now=now)


# --- Drafts, checks and submit ---------------------------------------------------------------
