"""Checkpoint evaluation API: start one (engineers, leads, admins), list a project's, read one with its figures and
its rows, cancel. Thin: services and selectors do the work; a bad field is a studio.errors.Invalid (400)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation import selectors, services
from evaluation.access import access_evaluation_job, evaluation_jobs_for
from evaluation.models import EvaluationJob, EvaluationSample
from studio.access import AccessedObjectMixin, ActionPermission
from studio.api import job_cancel_response
from traces.access import access_project


class EvaluationJobSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvaluationJob
        fields = [
            "id",
            "project",
            "checkpoint",
            "model_dir",
            "model_name",
            "weights_hash",
            "settings",
            "selection",
            "status",
            "progress_done",
            "progress_total",
            "samples_total",
            "samples_scored",
            "samples_failed",
            "samples_skipped",
            "metrics",
            "message",
            "errors",
            "created_at",
            "started_at",
            "finished_at",
        ]


class EvaluationSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvaluationSample
        fields = [
            "id",
            "annotation",
            "annotation_version",
            "kind",
            "split",
            "category",
            "round",
            "round_name",
            "loglik_sum",
            "n_tokens",
            "rejected_loglik_sum",
            "rejected_n_tokens",
        ]


class EvaluationStartSerializer(serializers.Serializer):
    model_dir = serializers.CharField(
        max_length=500,
        help_text="The checkpoint's directory on the gpu workers, or a folder name in STUDIO_EVALUATION_CHECKPOINTS_DIR.",
    )
    checkpoint = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="Its name; blank: the folder's."
    )
    split = serializers.ChoiceField(
        choices=services.SPLITS,
        required=False,
        allow_null=True,
        default=None,
        help_text="validation (the bundle's split) or all; default: all with a round, else validation.",
    )
    round = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="Only this round's traces (its name, else its id)."
    )
    validation_fraction = serializers.FloatField(required=False, allow_null=True, default=None)
    split_seed = serializers.IntegerField(required=False, allow_null=True, default=None)
    export = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Take the split's fraction and seed from this export."
    )
    settings = serializers.DictField(required=False, default=dict)


class ProjectEvaluations(APIView):
    """GET: the project's evaluations, newest first. POST: queue an evaluation of a checkpoint (gpu queue)."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "evaluation.view", "POST": "evaluation.run"}

    @extend_schema(responses={200: EvaluationJobSerializer(many=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        jobs = selectors.evaluation_jobs_of(project, evaluation_jobs_for(request.user))[:100]
        return Response(EvaluationJobSerializer(jobs, many=True).data)

    @extend_schema(request=EvaluationStartSerializer, responses={202: EvaluationJobSerializer, 400: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = EvaluationStartSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        job = services.evaluation_job_create(
            project=project,
            user=request.user,
            model_dir=data["model_dir"],
            checkpoint=data["checkpoint"],
            split=data["split"],
            round_ref=data["round"],
            validation_fraction=data["validation_fraction"],
            split_seed=data["split_seed"],
            export_id=data["export"],
            settings=data["settings"],
        )
        return Response(EvaluationJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class EvaluationDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    serializer_class = EvaluationJobSerializer
    permission_classes = [ActionPermission]
    permission_action = "evaluation.view"

    def get_queryset(self):
        return evaluation_jobs_for(self.request.user)


class EvaluationSamples(generics.ListAPIView):
    """The evaluation's scored rows (one per sample), paginated."""

    serializer_class = EvaluationSampleSerializer
    permission_classes = [ActionPermission]
    permission_action = "evaluation.view"

    def get_queryset(self):
        job = access_evaluation_job(self.request, self.kwargs["pk"])
        return selectors.evaluation_rows(job)


class EvaluationCancel(APIView):
    permission_classes = [ActionPermission]
    permission_action = "evaluation.run"

    @extend_schema(request=None, responses={200: dict, 409: dict})
    def post(self, request, pk: int):
        job = access_evaluation_job(request, pk)
        return job_cancel_response(job)
