"""REST API of the workspace: hand-out, heartbeat, drafts, action checks, submit, skip, leases. Thin over services."""

from __future__ import annotations

import copy

from django.urls import reverse
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors, services
from annotation.access import access_annotation
from annotation.models import Lease, Verdict
from studio.access import ActionPermission, can
from studio.errors import Invalid, NotFound
from traces.access import access_project


class WorkView(APIView):
    permission_classes = [ActionPermission]
    permission_action = "annotation.work"

    def own_annotation(self, pk: int):
        return access_annotation(self.request, pk)

    def valid_form(self, form: serializers.Serializer, pk: int) -> dict:
        """The form's data; when it is invalid, a 404 first if the annotation is not the user's (writes
        read the annotation once, in the service, so only a refused body pays for this check)."""
        if not form.is_valid():
            self.own_annotation(pk)
            raise serializers.ValidationError(form.errors)
        return dict(form.validated_data)


class NextTrace(WorkView):
    """Take the next open trace of a project with a lease (or resume the one already held)."""

    @extend_schema(request=None, responses={200: dict, 404: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        order = request.data.get("order", "") if isinstance(request.data, dict) else ""
        if order not in ("", "id", "suspicion"):
            raise Invalid(
                gettext("order must be 'id' or 'suspicion', not %(order)s") % {"order": repr(str(order)[:40])}
            )
        claim = services.lease_next_trace(user=request.user, project=project, most_doubtful_first=order == "suspicion")
        if claim is None:
            raise NotFound(gettext("No trace of %(project)s is open to you right now.") % {"project": project.name})
        annotation, lease = claim
        return Response(
            {
                "annotation": selectors.annotation_json(annotation),
                "lease": {"id": lease.pk, "expires_at": lease.expires_at},
                "trace_id": annotation.trace_id,
                "workspace_url": f"/annotations/{annotation.pk}/",
            }
        )


class AnnotationDetail(WorkView):
    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        return Response(selectors.annotation_json(self.own_annotation(pk)))


class AnnotationSteps(WorkView):
    """A window of the annotated trace's steps, as the workspace shows them (its page carries the steps around the
    one it opens on; the rest come from here). ``?first=&last=`` (1-based, inclusive, at most
    ``selectors.STEPS_MAX_SPAN`` steps); none given: the first window."""

    @extend_schema(responses={200: dict, 400: dict, 404: dict})
    def get(self, request, pk: int):
        trace = self.own_annotation(pk).trace
        first, last = selectors.workspace_steps_range(
            trace, request.query_params.get("first"), request.query_params.get("last")
        )
        steps = selectors.workspace_steps(trace, first, last) if last >= first else []
        return Response({"first": first, "last": last, "step_count": trace.step_count, "steps": steps})


class DraftSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, help_text="The version this edit was based on.")
    verdict = serializers.ChoiceField(choices=Verdict.values, required=False, allow_blank=True)
    tau = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    error_category = serializers.CharField(max_length=80, required=False, allow_blank=True)
    note = serializers.CharField(max_length=20000, required=False, allow_blank=True, trim_whitespace=False)
    unusable_reason = serializers.CharField(max_length=20000, required=False, allow_blank=True, trim_whitespace=False)
    corrected_thought = serializers.CharField(max_length=20000, required=False, allow_blank=True, trim_whitespace=False)
    reflection_thought = serializers.CharField(
        max_length=20000, required=False, allow_blank=True, trim_whitespace=False
    )
    no_reflection_reason = serializers.CharField(
        max_length=20000, required=False, allow_blank=True, trim_whitespace=False
    )
    editor_state = serializers.JSONField(required=False)

    def get_fields(self):
        """The declared fields, copied shallowly. DRF deep-copies them for every serializer (rebuilding each field
        from its arguments) so that a view may change one instance's fields; nothing changes these, and the autosave
        validates a body with them every two seconds per annotator. Each copy is bound to this serializer alone; what
        the copies share (choices, messages, validators) is only read while validating."""
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}


class AnnotationDraft(WorkView):
    """Autosave: every save names the version it was based on; a stale one gets 409 and the newer version."""

    @extend_schema(request=DraftSerializer, responses={200: dict, 409: dict})
    def put(self, request, pk: int):
        fields = self.valid_form(DraftSerializer(data=request.data), pk)
        version = fields.pop("version")
        annotation = services.annotation_save_draft(
            annotation_id=pk, user=request.user, base_version=version, fields=fields
        )
        return Response(selectors.annotation_json(annotation))


class ActionCheckSerializer(serializers.Serializer):
    slot = serializers.ChoiceField(choices=services.EDITOR_SLOTS)
    action = serializers.JSONField(allow_null=True)
    tau = serializers.IntegerField(min_value=1, allow_null=True)


class ActionCheck(WorkView):
    """The canonical UI-TARS string and the server grammar's problems for an editor action (writes nothing)."""

    @extend_schema(request=ActionCheckSerializer, responses={200: dict})
    def post(self, request, pk: int):
        annotation = self.own_annotation(pk)
        form = ActionCheckSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        return Response(
            services.action_check(annotation=annotation, slot=data["slot"], action_json=data["action"], tau=data["tau"])
        )


class VersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)


class AnnotationSubmit(WorkView):
    @extend_schema(request=VersionSerializer, responses={200: dict, 400: dict, 409: dict})
    def post(self, request, pk: int):
        version = self.valid_form(VersionSerializer(data=request.data), pk)["version"]
        annotation = services.annotation_submit(annotation_id=pk, user=request.user, base_version=version)
        return Response(selectors.annotation_json(annotation))


class AnnotationSkip(WorkView):
    @extend_schema(request=None, responses={200: dict})
    def post(self, request, pk: int):
        annotation = services.annotation_skip(annotation_id=pk, user=request.user)
        return Response(selectors.annotation_json(annotation))


class LeaseHeartbeat(WorkView):
    @extend_schema(request=None, responses={200: dict, 409: dict})
    def post(self, request, pk: int):
        lease = services.lease_heartbeat(lease_id=pk, user=request.user)
        return Response({"id": lease.pk, "expires_at": lease.expires_at})


def lease_json(lease: Lease) -> dict:
    return {
        "id": lease.pk,
        "trace_id": lease.trace_id,
        "external_id": lease.trace.external_id,
        "user": lease.user.username,
        "created_at": lease.created_at,
        "heartbeat_at": lease.heartbeat_at,
        "expires_at": lease.expires_at,
    }


class ProjectLeases(WorkView):
    permission_action = "lease.manage"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response({"results": [lease_json(lease) for lease in selectors.open_leases(project=project)]})


class LeaseRelease(WorkView):
    """Close a lease: its holder when the page goes away (``navigator.sendBeacon``), or a lead freeing a trace.
    Closing an already closed lease answers the same and changes nothing."""

    permission_action = "lease.release"

    @extend_schema(request=None, responses={200: dict})
    def post(self, request, pk: int):
        page = str(request.data.get("page", "")) if isinstance(request.data, dict) else ""
        lease = services.lease_release_by(actor=request.user, lease_id=pk, action="lease.release", page=page)
        return Response({"id": lease.pk, "released_at": lease.released_at, "release_reason": lease.release_reason})


class AnnotationVersions(APIView):
    """Every saved version of an annotation (who, when, its number, what changed in words), for its annotator and the
    project's leads, and whether this user may restore one now (the restore's status rule, said in words)."""

    permission_classes = [ActionPermission]
    permission_action = "annotation.versions"

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        annotation = access_annotation(request, pk)
        refusal = services.restore_refusal(annotation, request.user)
        return Response(
            {
                "annotation_id": annotation.pk,
                "current_version": annotation.version,
                "status": annotation.get_status_display(),
                "can_restore": not refusal and can(request.user, "annotation.restore", annotation),
                "restore_refusal": refusal,
                "versions": [
                    {**entry, "restore_url": reverse("api-annotation-version-restore", args=[pk, entry["number"]])}
                    for entry in selectors.annotation_versions(annotation)
                ],
            }
        )


class AnnotationVersionRestore(APIView):
    """Write an older version's answer back as a new version. ``version`` is the version the user saw as current: a
    newer one is refused with 409 and the annotation now, as a stale draft is."""

    permission_classes = [ActionPermission]
    permission_action = "annotation.restore"

    @extend_schema(request=VersionSerializer, responses={200: dict, 404: dict, 409: dict})
    def post(self, request, pk: int, number: int):
        form = VersionSerializer(data=request.data)
        if not form.is_valid():
            access_annotation(request, pk)  # a 404 first for an annotation not theirs
            raise serializers.ValidationError(form.errors)
        annotation = services.annotation_restore_version(
            annotation_id=pk, user=request.user, number=number, base_version=form.validated_data["version"]
        )
        return Response({**selectors.annotation_json(annotation), "restored": number})
