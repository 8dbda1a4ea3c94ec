"""Pages: search with facets and step cards (and its CSV), slices with their trend, clusters, judge alignment."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from insights import selectors, services
from insights.access import access_cluster, access_cluster_run, access_slice, slices_for
from studio.access import can
from studio.errors import Invalid
from studio.inputs import id_from_text
from studio.jobs import job_cancel
from traces.access import access_project, projects_for

PAGE_SIZE = 50
FACET_LABELS = {
    "category": gettext_lazy("Error category"),
    "recorded_type": gettext_lazy("Recorded action"),
    "corrected_type": gettext_lazy("Corrected action"),
    "displacement": gettext_lazy("Point moved"),
    "direction": gettext_lazy("Moved towards"),
    "position": gettext_lazy("Step position (τ/n)"),
    "platform": gettext_lazy("Platform"),
    "app": gettext_lazy("App or site"),
    "round": gettext_lazy("Round"),
    "annotator": gettext_lazy("Annotator"),
    "verdict": gettext_lazy("Verdict"),
    "status": gettext_lazy("Review state"),
    "checkpoint": gettext_lazy("Checkpoint"),
    "agreement": gettext_lazy("Agreement on τ"),
    "suspicion": gettext_lazy("Pre-score suspicion at τ"),
}


def _query_string(query: selectors.SearchQuery) -> str:
    """The search as the search page's query string (its ids comma-separated)."""
    fields = query.to_json()
    if query.ids is not None:
        fields["ids"] = ",".join(map(str, query.ids))
    return urlencode(fields)


def _csv_response(rows: list[list], filename: str) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    csv.writer(response).writerows(rows)
    return response


def search_home(request):
    """The navigation's search: the projects whose corrections this person may search, a project and words to
    search them for; chosen, the project's search page with those words (``?project=…&q=…``)."""
    projects = projects_for(request.user, "search.view").order_by("name")
    chosen = request.GET.get("project")
    if chosen:
        project = access_project(request.user, chosen, "search.view")
        rest = {k: v for k, v in request.GET.items() if k != "project" and v}
        target = reverse("project-search", args=[project.pk])
        return redirect(f"{target}?{urlencode(rest)}" if rest else target)
    return render(request, "insights/search_home.html", {"projects": projects, "q": request.GET.get("q", "")})


def project_search(request, project_id: int):
    project = access_project(request.user, project_id, "search.view")
    error, status, query = "", 200, selectors.SearchQuery()
    try:
        query = selectors.search_query_parse(request.GET)
    except Invalid as exc:
        error, status = exc.detail, exc.status
    entries = selectors.search(selectors.entries_for(request.user, project), query)
    counts = selectors.search_counts(entries, project)
    context = {
        "project": project,
        "query": query,
        "query_string": _query_string(query),
        "count": counts.count,
        "facets_of": counts.facets_of,
        "cards": selectors.step_cards(selectors.in_page_order(entries, matches=counts.count), limit=PAGE_SIZE),
        "facets": [
            {
                "name": name,
                "label": FACET_LABELS[name],
                "values": counts.facets[name],
                "chosen": query.filters.get(name, ""),
            }
            for name in selectors.FACETS
        ],
        "error": error,
        "can_save": can(request.user, "slice.manage", project),
    }
    return render(request, "insights/search.html", context, status=status)


def search_csv_response(user, project, query: selectors.SearchQuery) -> HttpResponse:
    """The search's CSV: the page's link (``search.csv``) and the API's ``?format=csv`` answer with this."""
    entries = selectors.search(selectors.entries_for(user, project), query)
    return _csv_response(selectors.search_csv_rows(entries), f"search-project-{project.pk}.csv")


def project_search_csv(request, project_id: int):
    project = access_project(request.user, project_id, "search.view")
    return search_csv_response(request.user, project, selectors.search_query_parse(request.GET))


@require_http_methods(["GET", "POST"])
def project_slices(request, project_id: int):
    project = access_project(request.user, project_id, "slice.view")
    error, status = "", 200
    if request.method == "POST":
        project = access_project(request.user, project_id, "slice.manage")
        try:
            fields = {k: request.POST.get(k) for k in request.POST if k not in ("name", "csrfmiddlewaretoken")}
            query = selectors.search_query_parse(fields).to_json()
            made = services.slice_create(
                project=project, user=request.user, name=request.POST.get("name", ""), query=query
            )
        except Invalid as exc:
            error, status = exc.detail, exc.status
        else:
            return redirect("slice-detail", pk=made.pk)
    slices = selectors.slices_of(project, slices_for(request.user))
    rows = [{"slice": s, "trend": selectors.slice_trend(s, request.user)} for s in slices]
    return render(request, "insights/slices.html", {"project": project, "rows": rows, "error": error}, status=status)


@require_http_methods(["GET", "POST"])
def slice_detail(request, pk: int):
    if request.method == "POST":
        slice_ = access_slice(request.user, pk, "slice.manage")
        project_id = slice_.project_id
        services.slice_delete(slice_=slice_)
        return redirect("project-slices", project_id=project_id)
    slice_ = access_slice(request.user, pk, "slice.view")
    entries = selectors.slice_entries(slice_, request.user)
    trend = selectors.slice_trend(slice_, request.user)
    peak = max([point["count"] for point in trend] or [0]) or 1
    context = {
        "slice": slice_,
        "project": slice_.project,
        "count": (count := entries.count()),
        "search_query": _query_string(selectors.search_query_parse(slice_.query)),
        # Bars of a small SVG chart, 100 units a round, 90 high at the peak.
        "trend": [
            {
                **point,
                "x": 100 * i + 10,
                "mid": 100 * i + 50,
                "h": round(90 * point["count"] / peak),
                "y": 100 - round(90 * point["count"] / peak),
            }
            for i, point in enumerate(trend)
        ],
        "trend_width": 100 * max(1, len(trend)),
        "cards": selectors.step_cards(selectors.in_page_order(entries, matches=count), limit=PAGE_SIZE),
        "can_manage": can(request.user, "slice.manage", slice_.project),
        "can_export": can(request.user, "export.create", slice_.project),
        "can_queue": can(request.user, "queue.request", slice_.project),
        "checkpoints": sorted({point["checkpoint"] for point in trend if point.get("checkpoint")}),
        "compare": _slice_compare(request, slice_),
        "queue": selectors.slice_queue_state(slice_, request.user),
    }
    return render(request, "insights/slice.html", context)


def _slice_compare(request, slice_) -> dict | None:
    """The slice page's comparison of two checkpoints (``?before=…&after=…``), or None before one is asked; a bad
    choice shows its reason in place of the figures."""
    before, after = request.GET.get("before"), request.GET.get("after")
    if not before or not after:
        return None
    try:
        return selectors.slice_compare(slice_, request.user, by="checkpoint", before=before, after=after)
    except Invalid as error:
        return {"error": str(error)}


@require_POST
def slice_queue(request, pk: int):
    """The slice page's "send to the queue" and "take back" buttons."""
    slice_ = access_slice(request.user, pk, "queue.request")
    services.slice_send_to_queue(slice_=slice_, user=request.user, withdraw=request.POST.get("withdraw") == "1")
    return redirect("slice-detail", pk=slice_.pk)


def _page_number(raw: str | None) -> int:
    if not raw:
        return 1
    number = id_from_text(raw)
    if not number:
        raise Invalid(gettext("page: a page number, 1 or more"), field="page")
    return number


@require_http_methods(["GET", "POST"])
def project_clusters(request, project_id: int):
    """The latest clustering's state (cancel while it runs) and the clusters of the newest run that has them, a page
    of CLUSTERS_PAGE_SIZE at a time: a card's merge field finds the other cluster by name (``api-cluster-merge``),
    so no page lists every cluster for every card."""
    project = access_project(request.user, project_id, "slice.view")
    if request.method == "POST":
        project = access_project(request.user, project_id, "slice.manage")
        services.cluster_run_create(project=project, user=request.user)
        return redirect("project-clusters", project_id=project.pk)
    latest = selectors.latest_cluster_run(project)
    shown = selectors.clustered_run(project)
    paged = selectors.cluster_page(shown, page=_page_number(request.GET.get("page"))) if shown else None
    by_kind = paged["by_kind"] if paged else {}
    context = {
        "project": project,
        "run": latest,
        "shown": shown,
        "paged": paged,
        "clusters": [
            {
                "cluster": c,
                "examples": selectors.cluster_examples(c, request.user),
                "can_merge": by_kind.get(c.kind, 0) > 1,
            }
            for c in (paged["clusters"] if paged else [])
        ],
        "can_manage": can(request.user, "slice.manage", project),
    }
    return render(request, "insights/clusters.html", context)


def _clusters_page(project_id: int, page: str | None):
    """Back to the clusters page the form was on."""
    url = reverse("project-clusters", args=[project_id])
    number = id_from_text(page or "")
    return redirect(f"{url}?page={number}" if number and number > 1 else url)


@require_POST
def cluster_edit(request, pk: int):
    """The clusters page's forms: rename (label), pin or unpin, merge another cluster into this one (named in the
    merge field: a choice it offered, or a name only one other cluster of its kind has)."""
    cluster = access_cluster(request.user, pk, "slice.manage")
    form = request.POST
    if "merge_with" in form:
        other = selectors.cluster_merge_target(cluster, form.get("merge_with", ""))
        services.cluster_merge(cluster=cluster, other_id=other.pk)
    else:
        pinned = {"1": True, "0": False}.get(form.get("pinned", ""))
        label = form.get("label") if "label" in form else None
        services.cluster_update(cluster=cluster, label=label, pinned=pinned)
    return _clusters_page(cluster.run.project_id, form.get("page"))


@require_POST
def cluster_run_cancel(request, pk: int):
    run = access_cluster_run(request.user, pk, "slice.manage")
    changed, said = job_cancel(run)
    (messages.success if changed else messages.info)(request, said)
    return redirect("project-clusters", project_id=run.project_id)


@require_POST
def cluster_slice(request, pk: int):
    cluster = access_cluster(request.user, pk, "slice.manage")
    made = services.cluster_slice_create(cluster=cluster, user=request.user)
    return redirect("slice-detail", pk=made.pk)


def project_alignment(request, project_id: int):
    project = access_project(request.user, project_id, "alignment.view")
    context = {"project": project, "alignment": selectors.judge_alignment(project)}
    return render(request, "insights/alignment.html", context)


def project_alignment_csv(request, project_id: int):
    project = access_project(request.user, project_id, "alignment.view")
    rows = selectors.alignment_csv_rows(selectors.judge_alignment(project))
    return _csv_response(rows, f"alignment-project-{project.pk}.csv")
