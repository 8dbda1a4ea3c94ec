"""Replay requests (docs/runners.md): made for an accepted correction, claimed by one runner at a time, pushed to
as a branch of the corrected trace, ended by the environment's verdict, the runner's failure, the project's deadline
or a cancel. A request is a row, not only a message: a runner polls for it (``replay_request_claim``), so a broker or
Redis restart loses none, and a claim holds only while its lease is renewed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext

from annotation.models import Annotation, AnnotationStatus, Verdict
from replays.models import REPLAY_ENDED, ReplayPolicy, ReplayRequest, ReplayStatus
from studio.db import atomic_with_retry
from studio.errors import Conflict, Invalid
from studio.inputs import input_problem
from traces import grammar
from traces.models import Outcome, Project, Trace
from traces.services import trace_end, trace_step_push
from webhooks.models import WebhookEvent
from webhooks.services import event_emit

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import UploadedFile

    from traces.services.step_push import StepPushResult

REASONS = ("lead", "rule", "api")
RUNNER_NAME_MAX = ReplayRequest._meta.get_field("claimed_by").max_length or 200
MESSAGE_MAX = 4000


def replay_policy_of(project: Project) -> ReplayPolicy:
    """The project's replay settings (the defaults until a lead changes them)."""
    return ReplayPolicy.objects.filter(project=project).first() or ReplayPolicy(project=project)


def replay_policy_set(
    *, project: Project, every_accepted_correction: bool, deadline_s: int | None = None, lease_s: int | None = None
) -> ReplayPolicy:
    policy = replay_policy_of(project)
    policy.every_accepted_correction = bool(every_accepted_correction)
    for name, value in (("deadline_s", deadline_s), ("lease_s", lease_s)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 7 * 24 * 3600:
                raise Invalid(
                    gettext("%(name)s: whole seconds from 1 to a week, not %(value)s")
                    % {"name": name, "value": repr(value)},
                    field=name,
                )
            setattr(policy, name, value)
    policy.save()
    return policy


def corrected_action_for_trace(annotation: Annotation) -> str:
    """The annotation's corrected action in its trace's coordinate convention, points as integers: corrections are
    stored in the project's convention, a runner acts in the one its trace was recorded in. Invalid when it does
    not parse."""
    trace = annotation.trace
    project = trace.project
    try:
        action = grammar.parse_actions(annotation.corrected_action)[0]
    except (grammar.ActionSyntaxError, IndexError) as exc:
        raise Invalid(
            gettext("corrected_action: it does not parse (%(error)s)") % {"error": exc}, field="annotation"
        ) from None
    shot = trace.steps.filter(index=annotation.tau or 0).select_related("screenshot").first()
    screen = shot.screenshot if shot is not None else None
    if trace.coordinate_convention != project.coordinate_convention and screen is not None:
        action = grammar.convert_action(
            action,
            src=project.coordinate_convention,
            dst=trace.coordinate_convention,
            width=screen.width,
            height=screen.height,
            max_pixels=project.max_pixels,
        )
    action, _ = grammar.round_action(action)
    return grammar.render_action(action, box_tokens=False)


@dataclass
class ReplayCreated:
    request: ReplayRequest
    created: bool  # False: an open request for the same answer and version is answered


@atomic_with_retry
def replay_request_create(*, annotation: Annotation, actor: User | None = None, reason: str = "lead") -> ReplayCreated:
    """Ask the runners to replay ``annotation``'s correction: the request row, and the signed ``replay.requested``
    event to the project's endpoints. An open request (queued or claimed) for the same version is answered as it is.
    Invalid for an answer that is not an accepted correction of an ended trace."""
    if reason not in REASONS:
        raise Invalid(gettext("reason: one of %(reasons)s") % {"reasons": ", ".join(REASONS)}, field="reason")
    annotation = (
        Annotation.objects.select_for_update(of=("self",)).select_related("trace__project").get(pk=annotation.pk)
    )
    trace = annotation.trace
    if annotation.status != AnnotationStatus.ACCEPTED:
        raise Invalid(
            gettext("annotation %(id)s is %(status)s: only an accepted correction is replayed")
            % {"id": annotation.pk, "status": annotation.get_status_display()}
        )
    if annotation.verdict != Verdict.ERROR or not annotation.corrected_action or not annotation.tau:
        raise Invalid(gettext("annotation %(id)s corrects no step: nothing to replay") % {"id": annotation.pk})
    if trace.receiving:
        raise Invalid(
            gettext("trace %(trace)s is still receiving steps from its runner") % {"trace": repr(trace.external_id)}
        )
    if annotation.tau > trace.step_count:
        raise Invalid(
            gettext("annotation %(id)s corrects step %(step)s; the trace has %(count)s")
            % {"id": annotation.pk, "step": annotation.tau, "count": trace.step_count}
        )
    open_one = ReplayRequest.objects.filter(
        annotation=annotation,
        annotation_version=annotation.version,
        status__in=[ReplayStatus.QUEUED, ReplayStatus.CLAIMED],
    ).first()
    if open_one is not None:
        return ReplayCreated(open_one, created=False)
    policy = replay_policy_of(trace.project)
    request = ReplayRequest.objects.create(
        project=trace.project,
        annotation=annotation,
        annotation_version=annotation.version,
        trace=trace,
        tau=annotation.tau,
        corrected_action=corrected_action_for_trace(annotation),
        corrected_thought=annotation.corrected_thought,
        reason=reason,
        requested_by=actor,
        deadline_at=timezone.now() + timedelta(seconds=policy.deadline_s),
    )
    event_emit(project=trace.project, event=WebhookEvent.REPLAY_REQUESTED, payload=replay_payload(request))
    return ReplayCreated(request, created=True)


def branch_external_id(request: ReplayRequest) -> str:
    """The branch's name: the studio names it, so a runner cannot push two branches for one request."""
    return f"{request.trace.external_id[:200]}~replay-{request.pk}"


def replay_payload(request: ReplayRequest) -> dict:
    """What a runner needs to replay: the task and environment metadata as imported, the recorded actions before τ,
    the corrected action at τ (the trace's convention, integers) and where to push (docs/runners.md)."""
    trace = request.trace
    before = trace.steps.filter(index__lt=request.tau).order_by("index").values("index", "thought", "action_text")
    return {
        "replay": {
            "id": request.pk,
            "status": request.status,
            "claim": request.claims,
            "deadline_at": request.deadline_at.isoformat(),
            "lease_until": request.lease_until.isoformat() if request.lease_until else None,
            "trace": {
                "id": trace.pk,
                "external_id": trace.external_id,
                "instruction": trace.instruction,
                "source": trace.source,
                "metadata": trace.metadata,
                "coordinate_convention": trace.coordinate_convention,
                "round": trace.round.name if trace.round is not None else None,
                "step_count": trace.step_count,
            },
            "tau": request.tau,
            "actions_before": [
                {"index": s["index"], "thought": s["thought"], "action": s["action_text"]} for s in before
            ],
            "corrected": {"thought": request.corrected_thought, "action": request.corrected_action},
            "branch": {
                "external_id": branch_external_id(request),
                "parent": trace.external_id,
                "branch_at": request.tau,
            },
            "push": {
                "steps": reverse("api-replay-steps", args=[request.pk]),
                "finish": reverse("api-replay-finish", args=[request.pk]),
            },
        }
    }


def _branch_discard(request: ReplayRequest) -> None:
    """A branch its runner never ended goes with the claim it belonged to: nothing is kept half."""
    if request.branch_id is not None:
        Trace.objects.filter(pk=request.branch_id, receiving=True).delete()
        if not Trace.objects.filter(pk=request.branch_id).exists():
            request.branch = None


def replays_time_out(*, project: Project | None = None, now: datetime | None = None) -> int:
    """End the open requests whose deadline passed (timed out, their unfinished branch discarded); how many."""
    now = now or timezone.now()
    late = ReplayRequest.objects.filter(
        status__in=[ReplayStatus.QUEUED, ReplayStatus.CLAIMED], deadline_at__lte=now
    ).order_by("id")
    if project is not None:
        late = late.filter(project=project)
    ended = 0
    for pk in list(late.values_list("pk", flat=True)[:500]):
        with transaction.atomic():
            request = ReplayRequest.objects.select_for_update().filter(pk=pk).first()
            if request is None or request.status not in (ReplayStatus.QUEUED, ReplayStatus.CLAIMED):
                continue
            _branch_discard(request)
            request.status = ReplayStatus.TIMED_OUT
            request.message = "no runner finished it by the project's deadline"
            request.finished_at = now
            request.lease_until = None
            request.save()
            ended += 1
    return ended


def runner_name_checked(runner: str) -> str:
    runner = (runner or "").strip()
    problem = input_problem(runner, name="runner")
    if not runner or len(runner) > RUNNER_NAME_MAX or problem:
        raise Invalid(
            problem or gettext("runner: the runner's name, 1 to %(max)s characters") % {"max": RUNNER_NAME_MAX},
            field="runner",
        )
    return runner


def replay_request_claim(*, project: Project, runner: str) -> ReplayRequest | None:
    """The next request of ``project`` for ``runner``, claimed for the project's lease; None when none waits. A
    queued request, or a claimed one whose lease ran out (its runner stopped: its unfinished branch is discarded),
    oldest first; ``SKIP LOCKED`` lets runners claim side by side without waiting on each other's rows, and the
    claim counter is the token a push and the finish must show (a runner whose lease was taken is refused)."""
    runner = runner_name_checked(runner)
    replays_time_out(project=project)
    policy = replay_policy_of(project)

    @atomic_with_retry
    def claim() -> ReplayRequest | None:
        now = timezone.now()
        free = (
            ReplayRequest.objects.select_for_update(skip_locked=True)
            .filter(project=project, deadline_at__gt=now)
            .filter(Q(status=ReplayStatus.QUEUED) | Q(status=ReplayStatus.CLAIMED, lease_until__lt=now))
            .order_by("id")
        )
        request = free.first()
        if request is None:
            return None
        _branch_discard(request)
        request.status = ReplayStatus.CLAIMED
        request.claimed_by = runner
        request.claimed_at = now
        request.lease_until = now + timedelta(seconds=policy.lease_s)
        request.claims += 1
        request.save()
        return request

    return claim()


def _held(request_id: int, claim: str | int) -> ReplayRequest:
    """The request locked, checked to be claimed under ``claim`` (Conflict naming why not), its lease renewed."""
    request = ReplayRequest.objects.select_for_update(of=("self",)).select_related("trace__project").get(pk=request_id)
    if request.status in REPLAY_ENDED:
        said = (
            gettext("replay %(id)s is %(status)s: %(message)s")
            if request.message
            else gettext("replay %(id)s is %(status)s")
        )
        raise Conflict(
            said % {"id": request.pk, "status": request.get_status_display().lower(), "message": request.message},
            status=request.status,
        )
    if request.status != ReplayStatus.CLAIMED:
        raise Conflict(
            gettext("replay %(id)s is not claimed: claim it first") % {"id": request.pk}, status=request.status
        )
    try:
        token = int(str(claim).strip())
    except ValueError:
        raise Invalid(gettext("claim: the claim number the claim answered"), field="claim") from None
    if token != request.claims:
        raise Conflict(
            gettext(
                "replay %(id)s was claimed again (claim %(claims)s, by %(runner)s); claim %(token)s holds it no more"
            )
            % {"id": request.pk, "claims": request.claims, "runner": request.claimed_by, "token": token},
            status=request.status,
        )
    now = timezone.now()
    if request.deadline_at <= now:
        raise Conflict(gettext("replay %(id)s is past its deadline") % {"id": request.pk}, status=request.status)
    request.lease_until = now + timedelta(seconds=replay_policy_of(request.project).lease_s)
    return request


def replay_branch_push(
    *, request_id: int, claim: str | int, index: Any, step: Any, screenshot: bytes | UploadedFile | None = None
) -> StepPushResult:
    """Step ``index`` of the request's branch (the step push's rules, docs/rounds.md): index τ makes the branch of
    the corrected trace with its steps before τ shared; each next index appends. Conflict after the request ended or
    when ``claim`` holds it no more; renews the lease."""

    @atomic_with_retry
    def push() -> StepPushResult:
        request = _held(request_id, claim)
        result = trace_step_push(
            project=request.project,
            external_id=branch_external_id(request),
            index=index,
            step=step,
            screenshot=screenshot,
            parent=request.trace,
            branch_at=request.tau,
            source="replay",
        )
        request.branch = result.trace
        request.save(update_fields=["branch", "lease_until"])
        return result

    return push()


def replay_request_finish(
    *,
    request_id: int,
    claim: str | int,
    success: Any = None,
    score: Any = None,
    message: str = "",
    failed: bool = False,
    final_screenshot: bytes | UploadedFile | None = None,
) -> ReplayRequest:
    """The runner is done. With the environment's verdict (``success``, optional ``score``, the evaluator's
    ``message``): succeeded, its branch ended with that outcome; the branch must hold the corrected step τ. With
    ``failed`` (the runner could not replay: the environment would not restore, the agent crashed): failed with the
    runner's ``message``, its unfinished branch discarded. Conflict when the request ended or the claim is stale."""
    message = (message or "").strip()
    problem = input_problem(message, name="message")
    if problem or len(message) > MESSAGE_MAX:
        raise Invalid(problem or gettext("message: at most %(max)s characters") % {"max": MESSAGE_MAX}, field="message")
    if score is not None and score != "":
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise Invalid(
                gettext("score: a number, not %(value)s") % {"value": repr(str(score)[:40])}, field="score"
            ) from None
    else:
        score = None
    if not failed and not isinstance(success, bool):
        raise Invalid(
            gettext("success: true or false, the environment's verdict (or failed: true with a message)"),
            field="success",
        )
    if failed and not message:
        raise Invalid(gettext("message: say why the replay failed"), field="message")

    @atomic_with_retry
    def finish() -> ReplayRequest:
        request = _held(request_id, claim)
        now = timezone.now()
        if failed:
            _branch_discard(request)
            request.status = ReplayStatus.FAILED
            request.success = None
        else:
            branch = request.branch
            if branch is None or branch.step_count < request.tau:
                raise Conflict(
                    gettext("replay %(id)s: push the branch's step %(step)s (the corrected action) first")
                    % {"id": request.pk, "step": request.tau},
                    status=request.status,
                )
            trace_end(
                project=request.project,
                external_id=branch.external_id,
                final_screenshot=final_screenshot,
                outcome=Outcome.SUCCESS if success else Outcome.FAILURE,
            )
            request.status = ReplayStatus.SUCCEEDED
            request.success = success
        request.score = score
        request.message = message
        request.finished_at = now
        request.lease_until = None
        request.save()
        return request

    return finish()


@atomic_with_retry
def replay_branch_send_to_queue(*, request: ReplayRequest, actor: User | None = None) -> Trace:
    """Send a failed branch to the annotation queue as a trace of its own to annotate (branches are held from it).
    Invalid for a request without a failed, ended branch; a branch sent already is answered as it is."""
    request = ReplayRequest.objects.select_for_update(of=("self",)).select_related("branch").get(pk=request.pk)
    branch = request.branch
    if branch is None or request.status != ReplayStatus.SUCCEEDED or request.success is not False:
        raise Invalid(gettext("replay %(id)s has no failed branch to annotate") % {"id": request.pk})
    Trace.objects.filter(pk=branch.pk).update(held_from_queue=False)
    branch.held_from_queue = False
    return branch


@atomic_with_retry
def replay_request_cancel(*, request: ReplayRequest, actor: User | None = None) -> ReplayRequest:
    """Cancel a queued or claimed request (its unfinished branch discarded; its runner's next push or finish is
    refused). An ended request is answered as it is."""
    request = ReplayRequest.objects.select_for_update().get(pk=request.pk)
    if request.status in REPLAY_ENDED:
        return request
    _branch_discard(request)
    request.status = ReplayStatus.CANCELLED
    who = getattr(actor, "username", "") if actor is not None else ""
    request.message = f"cancelled by {who}" if who else "cancelled"
    request.finished_at = timezone.now()
    request.lease_until = None
    request.save()
    return request
