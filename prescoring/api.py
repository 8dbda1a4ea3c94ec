"""Pre-scoring API: start a run (leads), follow it, read a trace's suggestions. Thin: services and selectors do the work."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from prescoring import selectors, services
from prescoring.access import access_prescore_job, prescore_jobs_for
from prescoring.models import PrescoreJob, Scorer
from studio.access import AccessedObjectMixin, ActionPermission, can
from studio.api import job_cancel_response
from studio.inputs import id_from_text
from traces.access import access_project, access_trace


class PrescoreJobSerializer(serializers.ModelSerializer):
    class Meta:
        model = PrescoreJob
        fields = [
            "id",
            "project",
            "scorer",
            "status",
            "model_path",
            "model_name",
            "weights_hash",
            "settings",
            "trace_ids",
            "progress_done",
            "progress_total",
            "steps_scored",
            "steps_failed",
            "message",
            "errors",
            "created_at",
            "started_at",
            "finished_at",
        ]


class PrescoreStartSerializer(serializers.Serializer):
    scorer = serializers.ChoiceField(choices=Scorer.values)
    model_path = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=500,
        help_text="Local checkpoint directory on the workers; blank: the configured one.",
    )
    settings = serializers.DictField(required=False, default=dict)
    trace_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list, max_length=10000)


class PrescoreStart(APIView):
    """Queue a scoring run over the project's traces (or the listed ones); it runs in a worker."""

    permission_classes = [ActionPermission]
    permission_action = "prescore.run"

    @extend_schema(request=PrescoreStartSerializer, responses={202: PrescoreJobSerializer})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = PrescoreStartSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        job = services.prescore_job_create(project=project, user=request.user, **form.validated_data)
        return Response(PrescoreJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class PrescoreJobList(generics.ListAPIView):
    serializer_class = PrescoreJobSerializer
    permission_classes = [ActionPermission]
    permission_action = "job.view"

    def get_queryset(self):
        project = access_project(self.request, self.kwargs["project_id"])
        return prescore_jobs_for(self.request.user).filter(project=project).order_by("-created_at")


class PrescoreJobDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    serializer_class = PrescoreJobSerializer
    permission_classes = [ActionPermission]
    permission_action = "job.view"

    def get_queryset(self):
        return prescore_jobs_for(self.request.user)


class PrescoreJobCancel(APIView):
    permission_classes = [ActionPermission]
    permission_action = "prescore.run"

    @extend_schema(request=None, responses={200: dict, 409: dict})
    def post(self, request, pk: int):
        job = access_prescore_job(request, pk)
        return job_cancel_response(job)


class TraceSuggestions(APIView):
    """A trace's suggestions: the latest run of each scorer (``?rules_job=``/``?qwen2vl_job=`` pick an older run).
    In a blind project annotators get ``{"hidden": true}`` and nothing else."""

    permission_classes = [ActionPermission]
    permission_action = "prescore.view"

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        trace = access_trace(request.user, pk, "trace.view")
        if not can(request.user, "prescore.view", trace):
            return Response({"trace": trace.pk, "hidden": True, "scorers": {}, "history": []})
        job_ids = {}
        for scorer in Scorer.values:
            value = request.query_params.get(f"{scorer}_job")
            if value is not None:
                job_id = id_from_text(value)
                if job_id is None:
                    raise ValidationError({f"{scorer}_job": f"must be a job id, got {value[:40]!r}"})
                job_ids[scorer] = job_id
        return Response(selectors.trace_suggestions(trace, job_ids=job_ids))
