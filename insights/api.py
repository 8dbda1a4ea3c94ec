"""Insights API: search with facets and step cards, slices (saved searches) with their trend, clusters of accepted
corrections, judge alignment. Thin: selectors and services do the work; bad input is a studio.errors.Invalid (400)."""

from __future__ import annotations

import csv
import io

from django.http import JsonResponse
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from insights import selectors, services
from insights.access import access_cluster, access_cluster_run, access_slice, slices_for
from insights.models import Cluster, ClusterRun, Slice
from insights.views import search_csv_response
from studio.access import ActionPermission
from studio.api import job_cancel_response
from studio.errors import Invalid
from studio.inputs import id_from_text, page_number
from traces.access import access_project

PAGE_SIZE = 50

SEARCH_PARAMETERS = [
    OpenApiParameter(
        "q",
        str,
        description='Words and "double-quoted phrases" (at most 32); each must occur in the correction\'s text (as '
        "written, or its words in that order; punctuation splits words: search-box is the words search box). "
        "`a OR b`: either; `pref*`: words that begin so. A term of action syntax (start_box='(500) is found as "
        "people write actions (no box tokens). With q, the corrections whose own text holds the words come first, "
        "then best match first, ties newest first; without q, newest first.",
    ),
    *(OpenApiParameter(name, str, description=f"Facet filter on {name}.") for name in selectors.FACETS),
    OpenApiParameter("ids", str, description="Only these annotation ids (comma-separated)."),
    OpenApiParameter("page", int, description="1-based page of step cards (50 a page)."),
    OpenApiParameter("format", str, enum=["json", "csv"], description="csv: every match as the search page's CSV."),
]


class StepCardSerializer(serializers.Serializer):
    annotation_id = serializers.IntegerField()
    trace_id = serializers.IntegerField()
    instruction = serializers.CharField()
    language = serializers.CharField(help_text="The language of the trace's text (BCP 47), empty when unknown.")
    tau = serializers.IntegerField()
    step_count = serializers.IntegerField()
    round = serializers.CharField()
    annotator = serializers.CharField()
    status = serializers.CharField()
    category = serializers.CharField()
    displacement = serializers.CharField()
    direction = serializers.CharField()
    recorded_thought = serializers.CharField()
    recorded_action = serializers.CharField()
    corrected_thought = serializers.CharField()
    corrected_action = serializers.CharField()
    note = serializers.CharField()
    screenshot = serializers.CharField(allow_null=True, help_text="sha256 of the screenshot at τ.")
    recorded_point = serializers.ListField(child=serializers.FloatField(), allow_null=True, help_text="0..1 x, y")
    corrected_point = serializers.ListField(child=serializers.FloatField(), allow_null=True, help_text="0..1 x, y")


class SearchResultSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    facets = serializers.DictField(help_text="facet -> [{value, label, count}] among the results (facets_of of them).")
    facets_of = serializers.IntegerField(
        help_text="How many of the results the facet counts count: all of them (count), or past 10,000 results the "
        "newest 10,000."
    )
    results = StepCardSerializer(many=True)


class SearchCSVRenderer(BaseRenderer):
    """Lets ``?format=csv`` (or ``Accept: text/csv``) reach the search, which answers with the page's CSV
    (``views.search_csv_response``). What reaches this renderer is a refusal: its detail and kind as a CSV row."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        body = data if isinstance(data, dict) else {"detail": data}
        csv.writer(out).writerows([["detail", "kind"], [body.get("detail", ""), body.get("kind", "")]])
        return out.getvalue().encode(self.charset)


class ProjectSearch(APIView):
    """Search the project's corrections (the step at each annotation's first error): text and facet filters;
    facet counts among the results (past 10,000 results, among the newest 10,000: ``facets_of`` says how many);
    step cards, 50 a page, the corrections that hold the words first, then best match first when q is given, else
    (and past 5,000 matches) newest first. ``?format=csv``: every match as the search page's CSV.
    Annotators find their own corrections only."""

    permission_classes = [ActionPermission]
    permission_action = "search.view"
    renderer_classes = [*APIView.renderer_classes, SearchCSVRenderer]

    @extend_schema(parameters=SEARCH_PARAMETERS, responses={200: SearchResultSerializer})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        query = selectors.search_query_parse(request.query_params)
        if request.accepted_renderer.format == SearchCSVRenderer.format:
            return search_csv_response(request.user, project, query)
        page = page_number(request.query_params.get("page"), page_size=PAGE_SIZE)
        entries = selectors.search(selectors.entries_for(request.user, project), query)
        offset = (page - 1) * PAGE_SIZE
        # A text search's count reads every match: past 10,000 of them that read gives the page too.
        counts = selectors.search_counts(entries, project, page=(offset, PAGE_SIZE) if query.q else None)
        return Response(
            {
                "count": counts.count,
                "facets": counts.facets,
                "facets_of": counts.facets_of,
                "results": selectors.step_cards(
                    selectors.in_page_order(entries, matches=counts.count),
                    limit=PAGE_SIZE,
                    offset=offset,
                    matches=counts.count,
                    ids=counts.page_ids,
                ),
            }
        )


class TrendPointSerializer(serializers.Serializer):
    round = serializers.IntegerField(allow_null=True)
    name = serializers.CharField()
    count = serializers.IntegerField(help_text="The slice's corrections in this round.")
    of = serializers.IntegerField(help_text="All corrections in this round.")


class SliceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Slice
        fields = ["id", "project", "name", "query", "created_at"]


class SliceCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=120)
    query = serializers.DictField(help_text="q and facet filters, as the search takes them.")


class ProjectSlices(APIView):
    """GET: the project's slices with their trend. POST: save a search under a name."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "slice.view", "POST": "slice.manage"}

    @extend_schema(responses={200: SliceSerializer(many=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        slices = selectors.slices_of(project, slices_for(request.user))
        return Response([{**SliceSerializer(s).data, "trend": selectors.slice_trend(s, request.user)} for s in slices])

    @extend_schema(request=SliceCreateSerializer, responses={201: SliceSerializer, 400: dict, 409: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = SliceCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        made = services.slice_create(
            project=project, user=request.user, name=form.validated_data["name"], query=form.validated_data["query"]
        )
        return Response(SliceSerializer(made).data, status=status.HTTP_201_CREATED)


class SliceDetailSerializer(SliceSerializer):
    trend = TrendPointSerializer(many=True)
    count = serializers.IntegerField()

    class Meta(SliceSerializer.Meta):
        fields = [*SliceSerializer.Meta.fields, "trend", "count"]


class SliceDetail(APIView):
    """GET: the slice, its count and its count per round (the trend). DELETE: forget it."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "slice.view", "DELETE": "slice.manage"}

    @extend_schema(responses={200: SliceDetailSerializer})
    def get(self, request, pk: int):
        slice_ = access_slice(request, pk)
        return Response(
            {
                **SliceSerializer(slice_).data,
                "count": selectors.slice_entries(slice_, request.user).count(),
                "trend": selectors.slice_trend(slice_, request.user),
            }
        )

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.slice_delete(slice_=access_slice(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SliceCompare(APIView):
    """GET ?by=round|checkpoint&before=…&after=…: the slice's share of each side's corrections and the change."""

    permission_classes = [ActionPermission]
    permission_action = "slice.view"

    @extend_schema(
        parameters=[
            OpenApiParameter("by", str, description="round (ids) or checkpoint (names)"),
            OpenApiParameter("before", str, description="The earlier round's id or checkpoint's name."),
            OpenApiParameter("after", str, description="The later round's id or checkpoint's name."),
        ],
        responses={200: dict, 400: dict},
    )
    def get(self, request, pk: int):
        slice_ = access_slice(request, pk)
        params = request.query_params
        return Response(
            selectors.slice_compare(
                slice_,
                request.user,
                by=params.get("by", "round"),
                before=params.get("before", ""),
                after=params.get("after", ""),
            )
        )


class SliceQueue(APIView):
    """GET: how many of the slice's traces were sent back to the queue and still wait. POST: send them back for one
    more answer each, first in line (``{"withdraw": true}`` takes that back; answers given stay)."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "slice.view", "POST": "queue.request"}

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        slice_ = access_slice(request, pk)
        return Response(selectors.slice_queue_state(slice_, request.user))

    @extend_schema(request=dict, responses={200: dict, 400: dict})
    def post(self, request, pk: int):
        slice_ = access_slice(request, pk)
        withdraw = request.data.get("withdraw", False) if isinstance(request.data, dict) else False
        if not isinstance(withdraw, bool):
            raise Invalid(gettext("withdraw: true or false"))
        done = services.slice_send_to_queue(slice_=slice_, user=request.user, withdraw=withdraw)
        return Response({**done, **selectors.slice_queue_state(slice_, request.user)})


class ClusterSerializer(serializers.ModelSerializer):
    class Meta:
        model = Cluster
        fields = ["id", "kind", "name", "label", "display_name", "pinned", "merged", "terms", "size"]
        fields += ["sizes_by_round", "annotation_ids"]
        read_only_fields = ["id", "kind", "name", "display_name", "merged", "terms", "size"]
        read_only_fields += ["sizes_by_round", "annotation_ids"]


class ClusterRunSerializer(serializers.ModelSerializer):
    clusters = ClusterSerializer(many=True, read_only=True)
    model_name = serializers.CharField(read_only=True, help_text="The checkpoint's folder name (model embeddings).")

    class Meta:
        model = ClusterRun
        fields = [
            "id",
            "project",
            "status",
            "cancel_requested",
            "progress_done",
            "progress_total",
            "method",
            "representation",
            "model_name",
            "corrections",
            "without_words",
            "message",
            "created_at",
            "started_at",
            "finished_at",
            "clusters",
        ]


class ProjectClusters(APIView):
    """GET: the latest clustering of the project's accepted corrections (404-free: JSON null before the first).
    POST: cluster them again: on the CPU worker by TF-IDF, on the gpu worker by the pre-scoring model's embeddings
    where a model is configured (the run's ``representation``). While a run is queued or running, POST answers that
    run: a project has one at a time."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "slice.view", "POST": "slice.manage"}

    @extend_schema(responses={200: ClusterRunSerializer(allow_null=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        run = selectors.latest_cluster_run(project)
        if run is None:
            # DRF renders None as an empty body with no Content-Type; the answer is JSON all the same.
            return JsonResponse(None, safe=False)
        return Response(ClusterRunSerializer(run).data)

    @extend_schema(request=None, responses={202: ClusterRunSerializer})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        run = services.cluster_run_create(project=project, user=request.user)
        return Response(ClusterRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class ClusterSlice(APIView):
    """POST: save the cluster's corrections as a slice (its name: "cluster: <name>", or the body's name)."""

    permission_classes = [ActionPermission]
    permission_action = "slice.manage"

    @extend_schema(request=None, responses={201: SliceSerializer, 409: dict})
    def post(self, request, pk: int):
        cluster = access_cluster(request, pk)
        name = request.data.get("name", "") if isinstance(request.data, dict) else ""
        made = services.cluster_slice_create(cluster=cluster, user=request.user, name=str(name or ""))
        return Response(SliceSerializer(made).data, status=status.HTTP_201_CREATED)


class ClusterDetail(APIView):
    """GET: one cluster. PATCH: rename it (``label``; empty: back to its terms) or pin it (``pinned``). A later
    clustering keeps both on the cluster that covers most of the same corrections."""

    permission_classes = [ActionPermission]
    permission_action = {"GET": "slice.view", "PATCH": "slice.manage"}

    @extend_schema(responses={200: ClusterSerializer})
    def get(self, request, pk: int):
        return Response(ClusterSerializer(access_cluster(request, pk)).data)

    @extend_schema(request=ClusterSerializer, responses={200: ClusterSerializer, 400: dict})
    def patch(self, request, pk: int):
        cluster = access_cluster(request, pk)
        body = ClusterSerializer(cluster, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changed = services.cluster_update(
            cluster=cluster, label=body.validated_data.get("label"), pinned=body.validated_data.get("pinned")
        )
        return Response(ClusterSerializer(changed).data)


class ClusterRunCancel(APIView):
    """POST: cancel a clustering run, as any job is cancelled (queued: at once; running: at its next stage)."""

    permission_classes = [ActionPermission]
    permission_action = "slice.manage"

    @extend_schema(request=None, responses={200: dict, 409: dict})
    def post(self, request, pk: int):
        return job_cancel_response(access_cluster_run(request, pk))


class ClusterMerge(APIView):
    """GET ?q=words: the clusters that could merge into this one (the same clustering and kind) whose name holds
    those words, largest first, at most 20 (the clusters page's merge field). POST {"other": id}: merge another
    cluster of the same clustering and kind into this one."""

    permission_classes = [ActionPermission]
    permission_action = "slice.manage"

    @extend_schema(
        parameters=[OpenApiParameter("q", str, description="Words of the name (any case); empty: the largest.")],
        responses={200: dict},
    )
    def get(self, request, pk: int):
        cluster = access_cluster(request, pk)
        return Response(selectors.cluster_merge_candidates(cluster, request.query_params.get("q", "")))

    @extend_schema(request=dict, responses={200: ClusterSerializer, 400: dict})
    def post(self, request, pk: int):
        cluster = access_cluster(request, pk)
        other = request.data.get("other") if isinstance(request.data, dict) else None
        other_id = other if isinstance(other, int) and not isinstance(other, bool) else id_from_text(str(other or ""))
        if other_id is None:
            raise Invalid(gettext("other: the id of the cluster to merge into this one"))
        merged = services.cluster_merge(cluster=cluster, other_id=other_id)
        return Response(ClusterSerializer(merged).data)


class ProjectAlignment(APIView):
    """Each scorer that pre-scored the project against the accepted human first errors: precision and recall of
    "first error at τ", exact and within one step, over all traces, per round and per category."""

    permission_classes = [ActionPermission]
    permission_action = "alignment.view"

    @extend_schema(responses={200: dict})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response(selectors.judge_alignment(project))
