"""Replays API (docs/runners.md): leads ask for replays; a runner, with a lead's token like a push, claims the next
request (polling), pushes its branch step by step and finishes with the environment's verdict. Thin: services and
selectors do the work."""

from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_annotation
from replays import selectors, services
from replays.access import access_replay, replays_for
from replays.models import ReplayRequest, ReplayStatus
from studio.access import ActionPermission
from studio.errors import Invalid
from traces.access import access_project
from traces.api import TraceSerializer


class ReplaySerializer(serializers.ModelSerializer):
    verification = serializers.SerializerMethodField(help_text="The correction's standing over all its replays.")

    class Meta:
        model = ReplayRequest
        fields = [
            "id",
            "project",
            "annotation",
            "annotation_version",
            "trace",
            "tau",
            "corrected_action",
            "corrected_thought",
            "status",
            "reason",
            "created_at",
            "deadline_at",
            "claimed_by",
            "claimed_at",
            "lease_until",
            "claims",
            "branch",
            "success",
            "score",
            "message",
            "finished_at",
            "verification",
        ]

    def get_verification(self, request: ReplayRequest) -> str | None:
        return selectors.verifications([request.annotation_id]).get(request.annotation_id)


class ReplayCreateSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(min_value=1, help_text="The accepted correction to replay.")


class ReplayList(APIView):
    """GET: the project's replay requests (``?status=``), newest first. POST (leads): ask for a replay of an
    accepted correction; 201, or 200 with the open request of the same answer and version."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "replay.view", "POST": "replay.request"}
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(responses={200: ReplaySerializer(many=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        rows = replays_for(request.user).filter(project=project).order_by("-id")
        wanted = request.query_params.get("status", "")
        if wanted:
            if wanted not in ReplayStatus.values:
                raise Invalid(
                    gettext("status: one of %(statuses)s") % {"statuses": ", ".join(ReplayStatus.values)},
                    field="status",
                )
            rows = rows.filter(status=wanted)
        return Response(ReplaySerializer(rows[:200], many=True).data)

    @extend_schema(request=ReplayCreateSerializer, responses={200: ReplaySerializer, 201: ReplaySerializer})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        data = _valid(ReplayCreateSerializer, request.data)
        annotation = access_annotation(request.user, data["annotation"], "annotation.review")
        if annotation.project_id != project.pk:
            raise Invalid(
                gettext("annotation %(id)s is not of %(project)s") % {"id": annotation.pk, "project": project.name},
                field="annotation",
            )
        made = services.replay_request_create(annotation=annotation, actor=request.user, reason="api")
        return Response(
            ReplaySerializer(made.request).data, status=status.HTTP_201_CREATED if made.created else status.HTTP_200_OK
        )


class ReplayClaimSerializer(serializers.Serializer):
    runner = serializers.CharField(max_length=200, help_text="The runner's name, shown as who holds the request.")


class ReplayClaim(APIView):
    """POST (a runner): claim the next request of the project for the project's lease: 200 with what to replay
    (docs/runners.md), 204 when none waits. Poll it, or wait for the ``replay.requested`` webhook first."""

    permission_classes = [ActionPermission]
    permission_action = "replay.run"
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(request=ReplayClaimSerializer, responses={200: dict, 204: None})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        claimed = services.replay_request_claim(project=project, runner=request.data.get("runner", ""))
        if claimed is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(services.replay_payload(claimed))


class ReplayDetail(APIView):
    """GET: one replay request, what a runner is sent and where it stands."""

    permission_classes = [ActionPermission]
    permission_action = "replay.view"

    @extend_schema(responses={200: ReplaySerializer})
    def get(self, request, pk: int):
        replay = access_replay(request, pk)
        return Response({**ReplaySerializer(replay).data, **services.replay_payload(replay)})


class ReplayStepSerializer(serializers.Serializer):
    claim = serializers.IntegerField(help_text="The claim number the claim answered.")
    index = serializers.IntegerField(min_value=1, help_text="The branch's step, τ for its first own one.")
    step = serializers.CharField(help_text="One step object of the native format (docs/formats.md §1), as JSON.")
    screenshot = serializers.FileField(required=False, help_text="The screen the step acted on.")


class ReplaySteps(APIView):
    """POST (the claiming runner): step ``index`` of the request's branch, with the step push's rules: 201 stored,
    200 the same step again, 409 after the request ended, for a stale claim or a gap."""

    permission_classes = [ActionPermission]
    permission_action = "replay.run"
    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": ReplayStepSerializer}, responses={200: dict, 201: dict, 409: dict})
    def post(self, request, pk: int):
        replay = access_replay(request, pk)
        step = request.FILES.get("step") or request.data.get("step")
        result = services.replay_branch_push(
            request_id=replay.pk,
            claim=request.data.get("claim", ""),
            index=request.data.get("index", ""),
            step=step.read() if hasattr(step, "read") else step,
            screenshot=request.FILES.get("screenshot"),
        )
        return Response(
            {**TraceSerializer(result.trace).data, "step_index": result.step.index},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class ReplayFinishSerializer(serializers.Serializer):
    claim = serializers.IntegerField()
    success = serializers.BooleanField(required=False, allow_null=True, help_text="The environment's verdict.")
    score = serializers.FloatField(required=False, allow_null=True)
    message = serializers.CharField(required=False, allow_blank=True, help_text="The evaluator's or runner's words.")
    failed = serializers.BooleanField(required=False, help_text="The runner could not replay (say why in message).")
    final_screenshot = serializers.FileField(required=False)


class ReplayFinish(APIView):
    """POST (the claiming runner): the verdict (``success``, ``score``, ``message``) or ``failed`` with the runner's
    words. 200 with the request; 409 after it ended or for a stale claim."""

    permission_classes = [ActionPermission]
    permission_action = "replay.run"
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(request=ReplayFinishSerializer, responses={200: ReplaySerializer, 409: dict})
    def post(self, request, pk: int):
        replay = access_replay(request, pk)
        data = request.data
        finished = services.replay_request_finish(
            request_id=replay.pk,
            claim=data.get("claim", ""),
            success=_boolean(data.get("success"), "success"),
            score=data.get("score"),
            message=data.get("message", "") or "",
            failed=bool(_boolean(data.get("failed"), "failed")),
            final_screenshot=request.FILES.get("final_screenshot"),
        )
        return Response(ReplaySerializer(finished).data)


class ReplayCancel(APIView):
    """POST (leads): cancel a queued or claimed request; an ended one is answered as it is."""

    permission_classes = [ActionPermission]
    permission_action = "replay.request"

    @extend_schema(request=None, responses={200: ReplaySerializer})
    def post(self, request, pk: int):
        replay = access_replay(request, pk)
        return Response(ReplaySerializer(services.replay_request_cancel(request=replay, actor=request.user)).data)


class ReplayBranchQueue(APIView):
    """POST (leads): send the request's failed branch to the annotation queue as a trace to annotate."""

    permission_classes = [ActionPermission]
    permission_action = "replay.request"

    @extend_schema(request=None, responses={200: TraceSerializer})
    def post(self, request, pk: int):
        replay = access_replay(request, pk)
        return Response(TraceSerializer(services.replay_branch_send_to_queue(request=replay, actor=request.user)).data)


class ReplayPolicySerializer(serializers.Serializer):
    every_accepted_correction = serializers.BooleanField(help_text="Ask for a replay of each accepted correction.")
    deadline_s = serializers.IntegerField(min_value=1, help_text="A request not finished this long times out.")
    lease_s = serializers.IntegerField(min_value=1, help_text="A claim not renewed this long returns to the queue.")


class ReplayPolicyDetail(APIView):
    """GET: the project's replay rule and clocks. PATCH (leads): change them."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "replay.view", "PATCH": "replay.request"}
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(responses={200: ReplayPolicySerializer})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response(ReplayPolicySerializer(services.replay_policy_of(project)).data)

    @extend_schema(request=ReplayPolicySerializer, responses={200: ReplayPolicySerializer})
    def patch(self, request, project_id: int):
        project = access_project(request, project_id)
        policy = services.replay_policy_of(project)
        sent = request.data.dict() if hasattr(request.data, "dict") else dict(request.data)
        data = _valid(ReplayPolicySerializer, {**ReplayPolicySerializer(policy).data, **sent})
        policy = services.replay_policy_set(project=project, **data)
        return Response(ReplayPolicySerializer(policy).data)


class ReplayCounts(APIView):
    """GET: per round, how many corrections are verified, refuted, waiting and not replayed."""

    permission_classes = [ActionPermission]
    permission_action = "replay.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response({"rounds": selectors.verification_counts_by_round(project)})


def _valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        field, problems = next(iter(serializer.errors.items()))
        raise Invalid(f"{field}: {' '.join(str(p) for p in problems)}", field=field)
    return serializer.validated_data


def _boolean(value, name: str) -> bool | None:
    """A JSON boolean, or a form's true/false text; None when not sent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise Invalid(
        gettext("%(name)s: true or false, not %(value)s") % {"name": name, "value": repr(str(value)[:40])}, field=name
    )
