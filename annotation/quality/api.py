"""REST API of quality control: gold traces, the project's settings, the quality dashboard, paused queues, the
qualification and a scored answer's feedback. Thin over ``quality.services`` / ``quality.selectors``.

- ``GET|POST /api/projects/<id>/gold/`` (``gold.manage``): the gold traces; mark one answer
  (``{"annotation": id}``), or many traces (``{"rows": [{"external_id", "annotator"?}]}`` or a ``file``: CSV with
  the header ``external_id[,annotator]`` or JSONL) — the answer reports marked / unchanged / reference_changed /
  refused (each refusal with its line and reason);
- ``GET|DELETE /api/gold/<id>/`` (``gold.manage``): one gold trace with the scores it gave; removing it keeps them;
- ``GET /api/projects/<id>/quality/?from=&to=`` (``quality.view``): ``quality.selectors.quality_dashboard``;
- ``GET|PATCH /api/projects/<id>/quality/settings/`` (``quality.view`` / ``quality.manage``);
- ``POST /api/projects/<id>/quality/pause/`` (``quality.manage``): ``{"annotator": name, "paused": bool,
  "reason"?}``;
- ``GET /api/projects/<id>/qualification/`` (``qualification.view``): the user's own standing
  (``qualification_state``), and for leads every member's attempts (``members``);
- ``POST /api/projects/<id>/qualification/retry/`` (``quality.manage``): ``{"annotator": name}``, another attempt;
- ``GET /api/annotations/<id>/feedback/`` (``gold.feedback``): the comparison with the reference
  (``answer_feedback``); 409 with the reason (``feedback_refusal``) when there is none to show yet.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_annotation, access_gold
from annotation.dashboards import DateRange
from annotation.quality import selectors, services
from studio.access import ActionPermission, can
from studio.errors import Conflict, Invalid
from traces.access import access_project


def _member(project, name) -> User:
    """A member of ``project`` by user name; an Invalid naming it otherwise."""
    from traces.models import Membership

    if not isinstance(name, str) or not name.strip():
        raise Invalid(gettext("annotator: name the member (their user name)"), field="annotator")
    membership = Membership.objects.filter(project=project, user__username=name.strip()).select_related("user").first()
    if membership is None:
        raise Invalid(
            gettext("annotator: %(user)s is no member of %(project)s")
            % {"user": repr(name.strip()), "project": project.name},
            field="annotator",
        )
    return membership.user


class GoldRowSerializer(serializers.Serializer):
    external_id = serializers.CharField(max_length=255)
    annotator = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")


class GoldMarkSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(min_value=1, required=False, help_text="The accepted answer to make gold.")
    rows = GoldRowSerializer(many=True, required=False, help_text="Traces by external_id (and whose answer).")
    file = serializers.FileField(required=False, help_text="CSV (external_id[,annotator]) or JSONL of the same.")


class ProjectGold(APIView):
    permission_classes = [ActionPermission]
    permission_action = "gold.manage"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response(selectors.gold_list(project))

    @extend_schema(request=GoldMarkSerializer, responses={200: dict, 201: dict, 400: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = GoldMarkSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        if data.get("annotation") is not None:
            annotation = access_annotation(request, data["annotation"])
            if annotation.project_id != project.pk:
                raise Invalid(
                    gettext("annotation %(id)s is not of %(project)s") % {"id": annotation.pk, "project": project.name},
                    field="annotation",
                )
            gold, outcome = services.gold_mark_answer(annotation_id=annotation.pk, user=request.user)
            return Response(
                {**selectors.gold_json(gold), "outcome": outcome}, status=201 if outcome == "marked" else 200
            )
        if data.get("file") is not None:
            rows = services.gold_file_read(data["file"].read(), name=data["file"].name)
        elif data.get("rows"):
            rows = [
                services.GoldRow(n, row["external_id"].strip(), row.get("annotator", "").strip())
                for n, row in enumerate(data["rows"], start=1)
            ]
        else:
            raise Invalid(gettext("Send an annotation (its id), rows (external_id, annotator) or a file."))
        return Response(services.gold_mark_rows(project=project, user=request.user, rows=rows))


class GoldDetail(APIView):
    permission_classes = [ActionPermission]
    permission_action = "gold.manage"

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        return Response(selectors.gold_detail(access_gold(request, pk)))

    @extend_schema(responses={200: dict})
    def delete(self, request, pk: int):
        gold = access_gold(request, pk)
        return Response({"id": pk, **services.gold_remove(gold=gold, user=request.user)})


class ProjectQuality(APIView):
    permission_classes = [ActionPermission]
    permission_action = "quality.view"

    @extend_schema(responses={200: dict, 400: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        period = DateRange.from_query(request.query_params.get("from"), request.query_params.get("to"))
        return Response(selectors.quality_dashboard(project, period))


class ProjectQualitySettings(APIView):
    permission_classes = [ActionPermission]
    permission_action = {"GET": "quality.view", "PATCH": "quality.manage"}

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response(selectors.quality_settings_json(selectors.quality_settings(project)))

    @extend_schema(request=dict, responses={200: dict, 400: dict})
    def patch(self, request, project_id: int):
        project = access_project(request, project_id)
        if not isinstance(request.data, dict):
            raise Invalid(gettext("Send the settings to change as a JSON object."))
        saved = services.quality_settings_save(project=project, user=request.user, fields=dict(request.data))
        return Response(selectors.quality_settings_json(saved))


class PauseSerializer(serializers.Serializer):
    annotator = serializers.CharField(max_length=150)
    paused = serializers.BooleanField()
    reason = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class ProjectQualityPause(APIView):
    permission_classes = [ActionPermission]
    permission_action = "quality.manage"

    @extend_schema(request=PauseSerializer, responses={200: dict, 400: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = PauseSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        return Response(
            services.annotator_pause_set(
                project=project,
                annotator=_member(project, data["annotator"]),
                actor=request.user,
                paused=data["paused"],
                reason=data["reason"],
            )
        )


class ProjectQualification(APIView):
    permission_classes = [ActionPermission]
    permission_action = "qualification.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        data = selectors.qualification_state(user=request.user, project=project)
        if can(request.user, "quality.view", project):
            data["members"] = selectors.qualification_overview(project)
        return Response(data)


class RetrySerializer(serializers.Serializer):
    annotator = serializers.CharField(max_length=150)


class ProjectQualificationRetry(APIView):
    permission_classes = [ActionPermission]
    permission_action = "quality.manage"

    @extend_schema(request=RetrySerializer, responses={201: dict, 400: dict, 409: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = RetrySerializer(data=request.data)
        form.is_valid(raise_exception=True)
        annotator = _member(project, form.validated_data["annotator"])
        attempt = services.qualification_allow_retry(project=project, annotator=annotator, actor=request.user)
        return Response(selectors.attempt_json(attempt), status=201)


class AnnotationFeedback(APIView):
    permission_classes = [ActionPermission]
    permission_action = "gold.feedback"

    @extend_schema(responses={200: dict, 409: dict})
    def get(self, request, pk: int):
        annotation = access_annotation(request, pk)
        refusal = selectors.feedback_refusal(annotation, request.user)
        if refusal:
            raise Conflict(refusal)
        return Response(selectors.answer_feedback(annotation, reader=request.user))
