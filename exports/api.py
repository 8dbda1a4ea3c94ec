"""REST API for export jobs: create, status, cancel, download. Thin: selectors read, services write."""

from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from exports import selectors, services
from exports.access import access_export_job
from exports.formats import export_formats, format_choices
from exports.models import ExportJob
from exports.storage import bundle_response
from studio.access import AccessedObjectMixin, ActionPermission
from studio.errors import Conflict, Invalid
from studio.models import JobStatus
from traces.access import access_project


class ExportJobSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()
    status_display = serializers.CharField(
        source="get_status_display", read_only=True, help_text="The status as pages show it."
    )

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "project",
            "format",
            "options",
            "split_seed",
            "status",
            "status_display",
            "progress_done",
            "progress_total",
            "message",
            "errors",
            "counts",
            "bundle_sha256",
            "bundle_size",
            "download_url",
            "created_at",
            "started_at",
            "finished_at",
            "attempts",
        ]

    def get_download_url(self, job) -> str | None:
        return f"/api/exports/{job.pk}/bundle" if job.status == JobStatus.SUCCEEDED and job.bundle_name else None


class _ExportFormatField(serializers.ChoiceField):
    """The declared formats (exports.formats), read each time a request is (DRF makes its fields anew per
    serializer)."""

    def __init__(self, **kwargs):
        super().__init__(choices=format_choices(), **kwargs)


class ExportCreateSerializer(serializers.Serializer):
    format = _ExportFormatField(help_text="A format's name (GET /api/exports/formats/ lists them).")
    options = serializers.DictField(
        required=False,
        default=dict,
        help_text=(
            "include_valid_prefix (bool), include_error_free (bool), validation_fraction (0..1), split_seed (int), "
            "unparsed_history (skip | verbatim: samples whose history holds a step that did not parse), "
            "since_export (id of an earlier export: only annotations new or changed since it)"
        ),
    )


class ExportFormatSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="What an export's `format` takes.")
    label = serializers.CharField()  # type: ignore[assignment]  # the API's field; the stubs see Field.label
    sample_set = serializers.CharField(help_text="The samples it holds: sft_dpo, process or rl.")
    suffix = serializers.CharField(help_text="Its data files' suffix.")


class ExportFormats(APIView):
    """GET: the export formats, in the order declared (exports.formats); the command line lists them from here."""

    permission_classes = [ActionPermission]
    permission_action = "export.view"

    @extend_schema(responses={200: ExportFormatSerializer(many=True)})
    def get(self, request):
        rows = [
            {"name": f.name, "label": f.label, "sample_set": f.writer.sample_set, "suffix": f.writer.suffix}
            for f in export_formats()
        ]
        return Response(ExportFormatSerializer(rows, many=True).data)


class ProjectExports(APIView):
    """GET: the project's export jobs. POST: queue a new export (engineers, leads, admins)."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "export.view", "POST": "export.create"}

    @extend_schema(responses={200: ExportJobSerializer(many=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        jobs = selectors.export_jobs_for_user(request.user, project=project)[:100]
        return Response(ExportJobSerializer(jobs, many=True).data)

    @extend_schema(request=ExportCreateSerializer, responses={202: ExportJobSerializer})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = ExportCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        job = services.export_job_create(
            project=project,
            user=request.user,
            fmt=form.validated_data["format"],
            options=form.validated_data["options"],
        )
        return Response(ExportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ExportJobDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    serializer_class = ExportJobSerializer
    permission_classes = [ActionPermission]
    permission_action = "export.view"

    def get_queryset(self):
        return selectors.export_jobs_for_user(self.request.user)


class ExportJobCancel(APIView):
    permission_classes = [ActionPermission]
    permission_action = "export.create"

    @extend_schema(request=None, responses={200: ExportJobSerializer})
    def post(self, request, pk: int):
        job = access_export_job(request, pk)
        job, changed, said = services.export_job_cancel(job=job)
        if not changed:
            raise Conflict(said, **ExportJobSerializer(job).data)
        return Response({**ExportJobSerializer(job).data, "detail": said})


class _AnyAccept(DefaultContentNegotiation):
    """A download client may ask for application/zip; errors still go out as JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class ExportBundle(APIView):
    """The finished archive: streamed with HTTP Range (local storage) or a redirect to a presigned S3 URL."""

    permission_classes = [ActionPermission]
    permission_action = "export.view"
    content_negotiation_class = _AnyAccept

    @extend_schema(
        responses={
            (200, "application/zip"): OpenApiResponse(description="the bundle"),
            206: OpenApiResponse(description="a byte range"),
            302: OpenApiResponse(description="presigned S3 URL"),
            409: OpenApiResponse(description="not finished"),
        }
    )
    def get(self, request, pk: int):
        job = access_export_job(request, pk)
        if job.status != JobStatus.SUCCEEDED or not job.bundle_name:
            raise Conflict(
                gettext("export %(id)s is %(status)s; its bundle exists only once it succeeded.")
                % {"id": job.pk, "status": job.get_status_display()}
            )
        return bundle_response(request, job)


class ExportDiff(APIView):
    """GET ``?against=<id>``: annotations added, removed and changed (version) from that export's bundle to this
    one's; without ``against``, from the project's previous finished export."""

    permission_classes = [ActionPermission]
    permission_action = "export.view"

    @extend_schema(
        parameters=[OpenApiParameter("against", int, description="the older export (default: the previous one)")],
        responses={200: OpenApiResponse(description="added / removed / changed / unchanged"), 400: None},
    )
    def get(self, request, pk: int):
        job = access_export_job(request, pk)
        against_id = request.query_params.get("against")
        against = access_export_job(request, against_id) if against_id else selectors.export_previous(job)
        if against is None:
            raise Invalid(
                gettext("export %(id)s has no earlier finished export in its project to compare with") % {"id": job.pk}
            )
        return Response({"older": against.pk, "newer": job.pk, **selectors.export_diff(against, job).to_json()})
