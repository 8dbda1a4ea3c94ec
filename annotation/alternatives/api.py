"""On-policy alternatives API (the workspace calls it): ask for k alternatives at an annotation's step, read them,
mark one wrong or take one as the correction's starting point. Thin over annotation.alternatives services/selectors.

Who: the annotation's annotator, and leads (annotation.alternatives); in a blind project the pre-scoring rule
(prescore.view) refuses annotators, as it does for suggestions."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_annotation
from annotation.alternatives import selectors, services
from studio.access import ActionPermission
from studio.errors import Invalid


def _reachable(user, pk: int):
    """The annotation when the user may ask for its alternatives: theirs (or a lead's project's), and pre-scoring
    visible to them in the project (one rule for suggestions and alternatives)."""
    annotation = access_annotation(user, pk, "annotation.alternatives")
    access_annotation(user, pk, "prescore.view")
    return annotation


def _model_state() -> dict:
    try:
        return {"configured": True, "model_dir": services.alternatives_model_dir(), "problem": ""}
    except Invalid as exc:
        return {"configured": False, "model_dir": "", "problem": str(exc)}


class AlternativesRequestSerializer(serializers.Serializer):
    step = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="1-based step; default the annotation's τ."
    )
    k = serializers.IntegerField(min_value=1, max_value=services.MAX_K, required=False)
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, required=False)


class AnnotationAlternatives(APIView):
    """GET: the latest alternatives (and whether a model is configured, else what to set). POST: ask for k
    alternatives at the step (202, a job on the gpu queue; 400 naming the setting when no model is configured)."""

    permission_classes = [ActionPermission]
    permission_action = "annotation.alternatives"

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        annotation = _reachable(request.user, pk)
        return Response({**selectors.alternatives_of(annotation), "model": _model_state()})

    @extend_schema(request=AlternativesRequestSerializer, responses={202: dict, 400: dict})
    def post(self, request, pk: int):
        annotation = _reachable(request.user, pk)
        form = AlternativesRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        job = services.alternatives_request(
            annotation=annotation,
            user=request.user,
            step_index=data.get("step"),
            k=data.get("k"),
            seed=data.get("seed"),
        )
        return Response(selectors.alternatives_of(annotation, job=job), status=status.HTTP_202_ACCEPTED)


class AlternativeMarkSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=["wrong", "taken", ""], help_text='"" removes the mark.')


class AnnotationAlternativeMark(APIView):
    """Mark an alternative wrong (a DPO rejected side in exports) or take it (the answer carries the thought and
    action to start the correction from)."""

    permission_classes = [ActionPermission]
    permission_action = "annotation.alternatives"

    @extend_schema(request=AlternativeMarkSerializer, responses={200: dict, 404: dict, 409: dict})
    def post(self, request, pk: int, alternative_id: int):
        annotation = _reachable(request.user, pk)
        form = AlternativeMarkSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        verdict = form.validated_data["verdict"]
        services.alternative_mark(
            annotation=annotation, alternative_id=alternative_id, verdict=verdict, user=request.user
        )
        answer = selectors.alternatives_of(annotation)
        if verdict == "taken":
            taken = services.alternative_for(annotation, alternative_id)
            answer["starting_point"] = services.alternative_rendered(taken, project=annotation.project)
        return Response(answer)
