"""REST API for projects, traces, steps and imports. Thin: selectors read, services write."""

from __future__ import annotations

from django.db.models import Count
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from studio.access import AccessedObjectMixin, ActionPermission
from studio.api import job_cancel_response
from traces import grammar, selectors, services
from traces.access import (
    access_import_job,
    access_project,
    access_trace,
    import_jobs_for,
    projects_for,
    rounds_for,
    traces_for,
)
from traces.forms import form_errors_text, project_form_for_change
from traces.importers import IMPORTERS, importers_in_detect_order
from traces.instructions import InstructionRow, instructions_read
from traces.models import CoordinateConvention, ImportJob, Outcome, Project, Round, Step, Trace


def import_format_choices() -> list[str]:
    """The importers a request may name ("": detect), read from the registry (traces.importers) when asked; one
    choice set, named once in the schema (settings SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]) though two
    requests carry it."""
    return ["", *sorted(IMPORTERS)]


class _ImportFormatField(serializers.ChoiceField):
    """The registered importers, read each time a request is (DRF makes its fields anew per serializer)."""

    def __init__(self, **kwargs):
        super().__init__(choices=import_format_choices(), required=False, default="", **kwargs)


class ProjectSerializer(serializers.ModelSerializer):
    double_annotation_words = serializers.SerializerMethodField(
        help_text='The double annotation in words, e.g. "double annotation: 20% of traces to 2 annotators each".'
    )

    def get_double_annotation_words(self, project: Project) -> str:
        return selectors.double_annotation_words(project)

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "description",
            "platform",
            "coordinate_convention",
            "max_pixels",
            "history_window",
            "history_full_images",
            "history_max_pixels",
            "box_tokens",
            "error_categories",
            "lease_idle_minutes",
            "double_annotation_share",
            "double_annotation_annotators",
            "double_annotation_words",
            "blind_prescoring",
            "text_language",
        ]


class StepSerializer(serializers.ModelSerializer):
    screenshot_url = serializers.SerializerMethodField()
    thumbnail_url = serializers.SerializerMethodField()
    width = serializers.IntegerField(source="screenshot.width", default=None)
    height = serializers.IntegerField(source="screenshot.height", default=None)

    class Meta:
        model = Step
        fields = [
            "index",
            "thought",
            "reflection",
            "action_summary",
            "action_text",
            "raw_response",
            "parsed_actions",
            "parse_error",
            "human_edited_response",
            "context",
            "screenshot_url",
            "thumbnail_url",
            "width",
            "height",
        ]

    def get_screenshot_url(self, step) -> str | None:
        return step.screenshot.image_url if step.screenshot_id else None

    def get_thumbnail_url(self, step) -> str | None:
        return step.screenshot.thumbnail_url if step.screenshot_id else None


class TraceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Trace
        fields = [
            "id",
            "project",
            "external_id",
            "instruction",
            "source",
            "outcome",
            "metadata",
            "step_count",
            "round",
            "receiving",
            "parent",
            "branch_at",
            "language",
            "created_at",
        ]


class TraceDetailSerializer(TraceSerializer):
    steps = serializers.SerializerMethodField()
    final_screenshot_url = serializers.SerializerMethodField()

    class Meta(TraceSerializer.Meta):
        fields = TraceSerializer.Meta.fields + ["steps", "final_screenshot_url"]

    def get_steps(self, trace) -> list[dict]:
        # many=True makes a ListSerializer, whose data is a list; the stubs type the call as the serializer's class.
        return StepSerializer(selectors.trace_steps(trace), many=True).data  # type: ignore[return-value]

    def get_final_screenshot_url(self, trace) -> str | None:
        return trace.final_screenshot.image_url if trace.final_screenshot_id else None


class ImportEntrySerializer(serializers.Serializer):
    file = serializers.CharField(help_text="The upload's file or trace folder the entry is about.")
    error = serializers.CharField(help_text="What happened, in words.")
    kind = serializers.CharField(
        required=False,
        help_text="A note's kind: awaiting-instruction, off-screen-point, distinct-id (stored under a distinct "
        "external_id: its own names other content), already-present (its content is stored under another external_id).",
    )
    trace = serializers.IntegerField(required=False, help_text="A note's trace (kept, or already present).")


class ImportJobSerializer(serializers.ModelSerializer):
    round_name = serializers.CharField(source="round.name", default=None, read_only=True)
    status_display = serializers.CharField(
        source="get_status_display", read_only=True, help_text="The status as pages show it."
    )
    # `errors` stays every entry, as clients have read it; these split it as the job's page does.
    problems = serializers.SerializerMethodField(
        help_text="Entries of `errors` for traces that failed or files refused."
    )
    notes = serializers.SerializerMethodField(help_text="Entries of `errors` on kept traces that need attention.")
    progress_text = serializers.SerializerMethodField(help_text='How far the reading went, e.g. "2 of 4 traces read".')
    attention = serializers.SerializerMethodField(
        help_text='What was lost, e.g. "5 of 6 traces failed; 1 file refused"; empty when nothing was.'
    )

    @extend_schema_field(ImportEntrySerializer(many=True))
    def get_problems(self, job: ImportJob) -> list[dict]:
        return selectors.import_job_report(job).problems

    @extend_schema_field(ImportEntrySerializer(many=True))
    def get_notes(self, job: ImportJob) -> list[dict]:
        return selectors.import_job_report(job).notes

    def get_attention(self, job: ImportJob) -> str:
        return selectors.import_job_report(job).attention

    def get_progress_text(self, job: ImportJob) -> str:
        return selectors.import_job_report(job).progress

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "project",
            "status",
            "status_display",
            "format",
            "original_name",
            "progress_done",
            "progress_total",
            "progress_text",
            "message",
            "errors",
            "problems",
            "notes",
            "attention",
            "traces_imported",
            "traces_skipped",
            "traces_failed",
            "steps_imported",
            "screenshots_stored",
            "unparsed_actions",
            "off_screen_steps",
            "round",
            "round_name",
            "created_at",
            "started_at",
            "finished_at",
        ]


class RoundSerializer(serializers.ModelSerializer):
    trace_count = serializers.IntegerField(read_only=True, default=0, help_text="Traces in the round.")

    class Meta:
        model = Round
        fields = ["id", "project", "name", "checkpoint", "weights_hash", "ran_at", "created_at", "trace_count"]
        read_only_fields = ["id", "project", "created_at", "trace_count"]
        # round_create judges the values (and answers a taken name with 409); the serializer only reads them.
        extra_kwargs = {"ran_at": {"required": False}, "name": {"validators": []}}
        validators: list = []


class RoundList(APIView):
    """GET: a project's rounds, oldest run first. POST (leads, admins): a new round; a taken name is a 409 whose
    ``round`` is the existing one's id."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "round.view", "POST": "round.create"}

    @extend_schema(responses={200: RoundSerializer(many=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response(RoundSerializer(selectors.rounds_of(project), many=True).data)

    @extend_schema(request=RoundSerializer, responses={201: RoundSerializer, 400: dict, 409: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = RoundSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        made = services.round_create(
            project=project,
            name=data["name"],
            checkpoint=data["checkpoint"],
            weights_hash=data.get("weights_hash", ""),
            ran_at=data.get("ran_at"),
            actor=request.user,
        )
        return Response(RoundSerializer(selectors.rounds_of(project).get(pk=made.pk)).data, status=201)


class RoundDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    serializer_class = RoundSerializer
    permission_classes = [ActionPermission]
    permission_action = "round.view"

    def get_queryset(self):
        return rounds_for(self.request.user).annotate(trace_count=Count("traces"))


class ProjectList(generics.ListAPIView):
    serializer_class = ProjectSerializer
    permission_classes = [ActionPermission]
    permission_action = "project.view"

    def get_queryset(self):
        return projects_for(self.request.user)


class ProjectSettingsSerializer(serializers.Serializer):
    """The settings a PATCH may change (the settings page's, members aside); any other field is refused by name."""

    name = serializers.CharField(required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    platform = serializers.CharField(required=False)
    coordinate_convention = serializers.CharField(required=False)
    history_window = serializers.IntegerField(required=False)
    history_full_images = serializers.IntegerField(
        required=False, help_text="The image budget: a prompt's last k screenshots at full size (0: all of them)."
    )
    history_max_pixels = serializers.IntegerField(
        required=False, help_text="The pixel budget of the older screenshots under the image budget."
    )
    error_categories = serializers.ListField(child=serializers.CharField(), required=False)
    double_annotation_share = serializers.FloatField(
        required=False, help_text="0 to 1: the share of traces answered by several annotators (0: off)."
    )
    double_annotation_annotators = serializers.IntegerField(
        required=False, help_text="Distinct annotators per shared trace (2 or more)."
    )
    text_language = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="The language of its traces' text (BCP 47: zh, ja, ar); empty: detected.",
    )


class ProjectDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    """GET: a project and its settings. PATCH (leads of the project, admins): change some settings, judged by the
    settings page's rules (``traces.forms.ProjectForm``, ``services.project_save``); a refusal is a 400 naming the
    field, an unknown field a 400 naming it."""

    serializer_class = ProjectSerializer
    permission_classes = [ActionPermission]
    permission_action = {"GET": "project.view", "PATCH": "project.manage"}

    def get_queryset(self):
        return projects_for(self.request.user)

    @extend_schema(request=ProjectSettingsSerializer, responses={200: ProjectSerializer, 400: dict})
    def patch(self, request, pk: int):
        project = access_project(request, pk)
        # A form-encoded PATCH is a QueryDict: one value a field, as a JSON body has it.
        data = request.data.dict() if hasattr(request.data, "dict") else request.data
        changes = data if isinstance(data, dict) else {}
        unknown = sorted(set(changes) - set(ProjectSettingsSerializer().fields))
        if unknown or not changes:
            raise services.ProjectRefused(
                unknown[0] if unknown else "",
                gettext("not a setting a PATCH may change: %(settings)s") % {"settings": ", ".join(unknown)}
                if unknown
                else gettext('Name a setting to change, e.g. {"double_annotation_share": 0.2}.'),
            )
        form = project_form_for_change(project, dict(changes))
        if not form.is_valid():
            field = next(iter(form.errors))
            raise services.ProjectRefused(field, form_errors_text(form))
        saved = services.project_save(actor=request.user, project=project, fields=form.settings())
        return Response(ProjectSerializer(saved).data)


class TracePushSerializer(serializers.Serializer):
    """What a runner sends (multipart): the trace as ``file`` (a .zip in any import layout, one trace) or as
    ``trace`` (a native trace object, a file part or a text field) with its ``screenshots`` (one part each, named
    as the object names them)."""

    file = serializers.FileField(required=False)
    trace = serializers.CharField(required=False, help_text="A native trace object (docs/formats.md §1), as JSON.")
    screenshots = serializers.ListField(child=serializers.FileField(), required=False)
    round = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    format = _ImportFormatField()


class TraceList(generics.ListAPIView):
    """GET: the project's traces. POST (leads, admins; a runner's token): push one trace, idempotent by content
    (instruction, screenshots, actions): 201 with the stored trace, 200 with the trace the project already had
    (``already_present``, under whichever external_id), 409 when that one lies in another round or when the
    external_id names a stored trace of other content (the message says what differs), 400 naming what cannot be
    read (docs/rounds.md)."""

    serializer_class = TraceSerializer
    permission_classes = [ActionPermission]
    permission_action = {"GET": "trace.view", "POST": "trace.import"}
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": TracePushSerializer},
        responses={200: TraceSerializer, 201: TraceSerializer, 400: dict, 409: dict},
    )
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        into = selectors.round_resolve(project, request.data.get("round", ""))
        document = request.FILES.get("trace") or request.data.get("trace")
        if isinstance(document, str):
            document = document.encode("utf-8")
        result = services.trace_push(
            project=project,
            round=into,
            archive=request.FILES.get("file"),
            document=document,
            screenshots=request.FILES.getlist("screenshots"),
            fmt=request.data.get("format", ""),
        )
        return Response(
            {**TraceSerializer(result.trace).data, "already_present": not result.created},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["project_id"], "trace.view")
        return selectors.traces_for_user(
            self.request.user,
            project=project,
            search=self.request.query_params.get("q", "")[:200],
            round=selectors.round_resolve(project, self.request.query_params.get("round", "")[:200]),
        )


class InstructionRowSerializer(serializers.Serializer):
    external_id = serializers.CharField(allow_blank=True)
    instruction = serializers.CharField(allow_blank=True, trim_whitespace=False)


class InstructionsSerializer(serializers.Serializer):
    """An instruction file (``file``: CSV ``external_id,instruction`` or JSONL, multipart) or its rows as JSON
    (``instructions``); ``replace``: also replace instructions traces already have."""

    file = serializers.FileField(required=False)
    instructions = InstructionRowSerializer(many=True, required=False)
    replace = serializers.BooleanField(required=False, default=False)


class InstructionsReportSerializer(serializers.Serializer):
    summary = serializers.CharField()
    set = serializers.ListField(child=serializers.CharField(), help_text="External ids whose instruction was set.")
    refused = serializers.ListField(child=serializers.DictField(), help_text="Rows refused: line, external_id, reason.")
    left = serializers.ListField(
        child=serializers.DictField(), help_text="Rows left as they were: line, external_id, reason."
    )
    still_awaiting = serializers.IntegerField(help_text="The project's traces still awaiting an instruction.")


class ProjectInstructions(APIView):
    """POST (leads, admins): many traces' instructions at once, by ``external_id``; the answer says what was set,
    refused (unknown id, empty instruction, unreadable row) and left (an instruction already there)."""

    permission_classes = [ActionPermission]
    permission_action = "trace.edit"

    @extend_schema(request=InstructionsSerializer, responses={200: InstructionsReportSerializer, 400: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = InstructionsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        if data.get("file") is not None:
            rows = instructions_read(data["file"].read(), name=data["file"].name)
        elif data.get("instructions"):
            rows = [
                InstructionRow(n, row["external_id"].strip(), row["instruction"])
                for n, row in enumerate(data["instructions"], start=1)
            ]
        else:
            raise services.TraceEditRefused(
                gettext("Send a file, or instructions: a list of {external_id, instruction}.")
            )
        report = services.trace_instructions_fill(
            project=project, actor=request.user, rows=rows, replace=data["replace"]
        )
        return Response(report.as_dict())


class TraceStepPushSerializer(serializers.Serializer):
    """One step a runner sends while it runs (multipart; docs/rounds.md)."""

    index = serializers.IntegerField(min_value=1, help_text="The step's 1-based position in the trace.")
    step = serializers.CharField(help_text="One step object of the native format (docs/formats.md §1), as JSON.")
    screenshot = serializers.FileField(required=False, help_text="The screen the step acted on.")
    instruction = serializers.CharField(required=False, allow_blank=True, help_text="Step 1: the task.")
    round = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text="Step 1: name or id.")
    coordinates = serializers.ChoiceField(choices=["", *CoordinateConvention.values], required=False, default="")
    source = serializers.CharField(  # type: ignore[assignment]  # the API's field; the stubs see Field.source
        required=False, allow_blank=True, help_text="Step 1: the agent or format the trace comes from (default native)."
    )
    metadata = serializers.CharField(
        required=False, allow_blank=True, help_text="Step 1: the trace's metadata, a JSON object (as an import's)."
    )
    platform = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="Step 1: the platform the trace was recorded on, kept as metadata.platform (as an import's).",
    )
    parent = serializers.CharField(  # type: ignore[assignment]  # the API's field; the stubs see Field.parent
        required=False,
        allow_blank=True,
        help_text="A branch: the external id of the trace it leaves (docs/runners.md).",
    )
    branch_at = serializers.IntegerField(
        required=False, min_value=1, help_text="A branch: the parent's step τ it differs from; its first own index."
    )


class TraceStepPush(APIView):
    """POST (leads, admins; a runner's token): step ``index`` of trace ``external_id``. Step 1 makes the trace,
    receiving steps; 201 for a stored step, 200 for the same step pushed again, 409 for other content at a stored
    index, a gap (naming the missing step) or an ended trace (docs/rounds.md)."""

    permission_classes = [ActionPermission]
    permission_action = "trace.import"
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": TraceStepPushSerializer},
        responses={200: TraceSerializer, 201: TraceSerializer, 400: dict, 409: dict},
    )
    def post(self, request, project_id: int, external_id: str):
        project = access_project(request, project_id)
        step = request.FILES.get("step") or request.data.get("step")
        result = services.trace_step_push(
            project=project,
            external_id=external_id,
            index=request.data.get("index", ""),
            step=step.read() if hasattr(step, "read") else step,
            screenshot=request.FILES.get("screenshot"),
            instruction=request.data.get("instruction", ""),
            round=selectors.round_resolve(project, request.data.get("round", "")),
            coordinates=request.data.get("coordinates", ""),
            source=request.data.get("source", ""),
            metadata=request.data.get("metadata", ""),
            platform=request.data.get("platform", ""),
            parent=selectors.branch_parent(project, request.data.get("parent", "")),
            branch_at=request.data.get("branch_at"),
        )
        return Response(
            {**TraceSerializer(result.trace).data, "step_index": result.step.index},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class TraceEndSerializer(serializers.Serializer):
    final_screenshot = serializers.FileField(required=False, help_text="The screen after the last action.")
    outcome = serializers.ChoiceField(choices=Outcome.choices, required=False, help_text="Default: as it was.")


class TraceEnd(APIView):
    """POST (leads, admins; a runner's token): the runner is done; the trace stops receiving steps and joins the
    annotation queue. 200, again 200 for an ended trace (docs/rounds.md); ``same_content_as`` names the project's
    other traces with the same content (a lead merges or deletes them: the trace_duplicates command)."""

    permission_classes = [ActionPermission]
    permission_action = "trace.import"
    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": TraceEndSerializer}, responses={200: TraceSerializer, 409: dict})
    def post(self, request, project_id: int, external_id: str):
        project = access_project(request, project_id)
        trace = services.trace_end(
            project=project,
            external_id=external_id,
            final_screenshot=request.FILES.get("final_screenshot"),
            outcome=request.data.get("outcome", ""),
        )
        same = selectors.traces_with_same_content(trace).values_list("external_id", flat=True)
        return Response({**TraceSerializer(trace).data, "same_content_as": list(same[:20])})


class TraceDeleteSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="Why the trace is deleted; kept in the audit record (TraceDeletion).")


class TraceDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    """GET: the trace with its steps. DELETE (leads, admins): remove it with its steps and annotations, audited."""

    serializer_class = TraceDetailSerializer
    permission_classes = [ActionPermission]
    permission_action = {"GET": "trace.view", "DELETE": "trace.delete"}

    def get_queryset(self):
        return traces_for(self.request.user)

    @extend_schema(request=TraceDeleteSerializer, responses={204: None, 400: dict})
    def delete(self, request, pk: int):
        trace = access_trace(request, pk)
        form = TraceDeleteSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        services.trace_delete(trace=trace, user=request.user, reason=form.validated_data["reason"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A .zip of traces (any supported layout) or a .jsonl of native traces.")
    format = _ImportFormatField()
    coordinates = serializers.ChoiceField(
        choices=["", *CoordinateConvention.values],
        required=False,
        default="",
        help_text="The convention of the traces' points when the source does not say it (default: the source's, "
        "else the project's).",
    )
    round = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text="The round (name, or id) every new trace goes into; an unknown round is a 400 naming it.",
    )


class ImportFormatSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="What an import's `format` takes.")
    label = serializers.CharField()  # type: ignore[assignment]  # the API's field; the stubs see Field.label


class ImportFormats(APIView):
    """GET: the trace layouts the studio reads, in the order detection tries them (traces.importers); the command
    line lists them from here."""

    permission_classes = [ActionPermission]
    permission_action = "trace.view"

    @extend_schema(responses={200: ImportFormatSerializer(many=True)})
    def get(self, request):
        rows = [{"name": i.format_name, "label": i.label} for i in importers_in_detect_order()]
        return Response(ImportFormatSerializer(rows, many=True).data)


class ImportCreate(APIView):
    """Upload an archive; the import runs in a worker and is followed through its job."""

    parser_classes = [MultiPartParser]
    permission_classes = [ActionPermission]
    permission_action = "trace.import"

    @extend_schema(request=ImportUploadSerializer, responses={202: ImportJobSerializer})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = ImportUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        name = upload.name or "upload"
        if not name.lower().endswith((".zip", ".jsonl")):
            raise ValidationError({"file": f"{name}: upload a .zip archive or a .jsonl file"})
        into = selectors.round_resolve(project, form.validated_data["round"])
        stored = services.import_upload_store(uploaded_file=upload)  # UploadTooLarge: the TooLarge kind, 413
        job = services.import_job_create(
            project=project,
            user=request.user,
            upload_name=stored,
            original_name=name,
            fmt=form.validated_data["format"],
            coordinates=form.validated_data["coordinates"],
            round=into,
        )
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportJobDetail(AccessedObjectMixin, generics.RetrieveAPIView):
    serializer_class = ImportJobSerializer
    permission_classes = [ActionPermission]
    permission_action = "job.view"

    def get_queryset(self):
        return import_jobs_for(self.request.user)


class ImportJobCancel(APIView):
    permission_classes = [ActionPermission]
    permission_action = "trace.import"

    @extend_schema(request=None, responses={200: dict, 409: dict})
    def post(self, request, pk: int):
        job = access_import_job(request, pk)
        return job_cancel_response(job)


class ActionTable(APIView):
    """The action grammar for the page's structured editor: served, never copied into JavaScript."""

    permission_classes = [ActionPermission]
    permission_action = "trace.view"

    @extend_schema(responses={200: dict})
    def get(self, request):
        return Response(grammar.action_table_json())


class ActionValidateSerializer(serializers.Serializer):
    action = serializers.CharField(max_length=4000)
    width = serializers.IntegerField(min_value=1, max_value=20000)
    height = serializers.IntegerField(min_value=1, max_value=20000)
    project = serializers.IntegerField()


class ActionValidate(APIView):
    """Parse and check one action string against a screen, as the server will on submit."""

    permission_classes = [ActionPermission]
    permission_action = "trace.view"

    @extend_schema(request=ActionValidateSerializer, responses={200: dict})
    def post(self, request):
        form = ActionValidateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        project = access_project(request, data["project"])
        try:
            action = grammar.parse_action(data["action"])
        except grammar.ActionSyntaxError as exc:
            return Response({"valid": False, "errors": [str(exc)]})
        problems = grammar.validate_action(
            action,
            convention=project.coordinate_convention,
            width=data["width"],
            height=data["height"],
            platform=project.platform,
            max_pixels=project.max_pixels,
        )
        return Response(
            {
                "valid": not problems,
                "errors": problems,
                "canonical": grammar.render_action(action, box_tokens=project.box_tokens),
                "action": action.to_json(),
            }
        )
