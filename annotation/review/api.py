"""REST API for leads: review decisions, the review queue, agreement, dashboards, presence, trace history.
Thin: review selectors, agreement and dashboards read, review services write."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import dashboards, services
from annotation.access import access_annotation
from annotation.agreement import agreement_report
from annotation.api import ActionCheckSerializer
from annotation.events import GOLD_SEEN_BY
from annotation.models import AnnotationStatus
from annotation.review import selectors as review_selectors
from annotation.review import services as review
from annotation.selectors import annotation_fields_json, verdict_words, workspace_steps_range
from annotation.services import answer_for_verdict
from studio.access import ActionPermission, can
from traces.access import access_project, access_trace


def annotation_summary(annotation) -> dict:
    """The review view of an annotation: the shared fields (annotation_fields_json) and who, where, and the decision."""
    return {
        **annotation_fields_json(annotation),
        "external_id": annotation.trace.external_id,
        "project_id": annotation.trace.project_id,
        "project": annotation.trace.project.name,
        "annotator": annotation.annotator.username,
        "verdict_text": verdict_words(annotation.verdict, annotation.tau),
        "is_adjudicated": annotation.is_adjudicated,
        "reviewed_by": annotation.reviewed_by.username if annotation.reviewed_by_id else None,
        "reviewed_at": annotation.reviewed_at,
        "review_url": reverse("review-detail", args=[annotation.pk]),
    }


def audit_json(event) -> dict:
    return {
        "id": event.id,
        "annotation_id": event.annotation_id,
        "annotator": event.annotation.annotator.username,
        "actor": event.actor.username if event.actor_id else None,
        "at": event.at,
        "kind": event.kind,
        "from_status": event.from_status,
        "to_status": event.to_status,
        "changes": event.changes,
        "comment": event.comment,
    }


class LeadView(APIView):
    permission_classes = [ActionPermission]
    permission_action = "annotation.review"

    def project(self, project_id: int):
        return access_project(self.request, project_id)

    def annotation(self, pk: int):
        return access_annotation(self.request, pk)


class ReviewQueue(LeadView):
    @extend_schema(operation_id="reviews_list", responses={200: dict})
    def get(self, request):
        status = request.query_params.get("status", AnnotationStatus.SUBMITTED)
        if status not in AnnotationStatus.values:
            raise ValidationError({"status": f"status must be one of {', '.join(AnnotationStatus.values)}"})
        project = None
        if request.query_params.get("project"):
            try:
                project = self.project(int(request.query_params["project"]))
            except ValueError:
                raise ValidationError({"project": "project must be a project id"}) from None
        queue = review_selectors.review_queue(request.user, project=project, status=status)[:200]
        return Response({"results": [annotation_summary(a) for a in queue]})


class ReviewDetail(LeadView):
    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        annotation = self.annotation(pk)
        context = review_selectors.review_context(annotation)
        return Response(
            {
                "annotation": annotation_summary(context["annotation"]),
                "thought_diff": context["thought_diff"],
                "error_markers": context["error_markers"],
                "reflection_markers": context["reflection_markers"],
                # The checkpoint's replies the annotator marked (wrong: the on-policy DPO rejected sides), as the page.
                "alternatives_marked": context["alternatives_marked"],
                # Every audit event of the trace (the page folds a sitting's edits into one row; the API does not).
                "history": [audit_json(e) for e in review_selectors.trace_history(annotation.trace)],
                "siblings": [annotation_summary(a) for a in context["siblings"]],
            }
        )


class ReviewSteps(LeadView):
    """The review viewer's screens of steps ``?first=&last=`` (1-based, inclusive, at most
    ``annotation.selectors.STEPS_MAX_SPAN`` steps; none given: the first window), the final screen with the last step:
    the review page carries the screens around τ, the rest come from here."""

    @extend_schema(responses={200: dict, 400: dict, 404: dict})
    def get(self, request, pk: int):
        annotation = self.annotation(pk)
        trace = annotation.trace
        first, last = workspace_steps_range(trace, request.query_params.get("first"), request.query_params.get("last"))
        # τ as the page shows it: an answer whose verdict has no τ marks none.
        tau = answer_for_verdict(annotation.verdict).get("tau", annotation.tau)
        screens = review_selectors.trace_viewer_screens(trace, first, last, tau=tau)
        return Response({"first": first, "last": last, "step_count": trace.step_count, "screens": screens})


class DecisionSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)
    version = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The version you reviewed; a newer one is refused with 409 and current_version.",
    )
    edits = serializers.DictField(
        required=False, default=dict, help_text="field -> new value (edit-and-accept, adjudicate)"
    )


class _Decision(LeadView):
    def decide(self, annotation, data, actor):
        """The decision on ``annotation`` by ``actor``, the lead the request signed in (``LeadView`` let no one else
        this far)."""
        raise NotImplementedError

    @extend_schema(request=DecisionSerializer, responses={200: dict, 400: dict, 409: dict})
    def post(self, request, pk: int):
        annotation = self.annotation(pk)
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decided = self.decide(annotation, body.validated_data, request.user)
        return Response(annotation_summary(self.annotation(decided.pk)))


class ReviewAccept(_Decision):
    def decide(self, annotation, data, actor):
        return review.review_accept(
            annotation_id=annotation.pk,
            actor=actor,
            comment=data["comment"],
            expected_version=data["version"],
        )


class ReviewReject(_Decision):
    def decide(self, annotation, data, actor):
        return review.review_reject(
            annotation_id=annotation.pk,
            actor=actor,
            comment=data["comment"],
            expected_version=data["version"],
        )


class ReviewEditAccept(_Decision):
    def decide(self, annotation, data, actor):
        return review.review_edit_and_accept(
            annotation_id=annotation.pk,
            actor=actor,
            edits=data["edits"],
            comment=data["comment"],
            expected_version=data["version"],
        )


class ReviewAdjudicate(_Decision):
    def decide(self, annotation, data, actor):
        return review.review_adjudicate(
            annotation_id=annotation.pk, actor=actor, edits=data["edits"], comment=data["comment"]
        )


class ReviewActionCheck(LeadView):
    """The lead's editor asks what the annotator's does: the canonical UI-TARS string and the grammar's problems for
    an action on o_τ or o_τ+1 (writes nothing)."""

    @extend_schema(request=ActionCheckSerializer, responses={200: dict})
    def post(self, request, pk: int):
        annotation = self.annotation(pk)
        form = ActionCheckSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        return Response(
            services.action_check(annotation=annotation, slot=data["slot"], action_json=data["action"], tau=data["tau"])
        )


class ProjectAgreement(LeadView):
    permission_action = "dashboard.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = self.project(project_id)
        return Response(agreement_report(project).as_dict(with_pairs=True))


class ProjectDashboard(LeadView):
    permission_action = "dashboard.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = self.project(project_id)
        period = dashboards.DateRange.from_query(request.query_params.get("from"), request.query_params.get("to"))
        return Response(dashboards.project_dashboard(project, period))


class RoundDashboard(LeadView):
    """Every round of the project side by side (annotation.dashboards.round_dashboard; docs/rounds.md)."""

    permission_action = "dashboard.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        return Response(dashboards.round_dashboard(self.project(project_id)))


class ProjectPresence(LeadView):
    permission_action = "presence.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = self.project(project_id)
        # A gold trace's leases only for those who may know which traces are gold.
        gold_seen_in = [project] if can(request.user, GOLD_SEEN_BY, project) else []
        return Response({"results": review_selectors.presence_snapshot([project], gold_seen_in=gold_seen_in)})


class TraceHistory(LeadView):
    permission_action = "trace.view"

    @extend_schema(responses={200: dict})
    def get(self, request, trace_id: int):
        trace = access_trace(request, trace_id)
        events = review_selectors.trace_history_visible(request.user, trace)
        return Response({"results": [audit_json(e) for e in events]})
