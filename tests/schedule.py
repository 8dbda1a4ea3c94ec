"""The order a parallel run (``pytest -n N --dist loadfile``) hands test files to its processes: the slowest files
first, then the rest by their number of tests, most first (xdist's own order).

pytest-xdist gives each process the next file of its queue as it finishes one. Left to its own order (the files with
the most tests first), one of the long files came last and one process ran it alone while the other stood idle; the
slowest first, the short files fill in at the end and both processes finish close together. One list serves the
three tiers: a run holds one tier's files, so each tier's files keep their order among themselves. The list is a measured
order (``--durations=0``, summed per file), not a rule: a file missing from it only runs later. A file named here
that no longer exists fails tests/architecture/test_tiers.py.

Loaded with ``-p tests.schedule`` (pyproject's addopts). The order of the tests inside a file is left as it is, so
module and class fixtures are made as before."""

from __future__ import annotations

import pytest

SLOWEST_FILES = (
    "tests/prescoring/test_prescore_model.py",
    "tests/prescoring/test_prescore_rules.py",
    "tests/access/test_access_matrix.py",
    "tests/traces/test_real_points.py",
    "tests/serving/test_settings_and_pages.py",
    "tests/insights/test_insights.py",
    "tests/exports/test_export_prm_verl.py",
    "tests/access/test_hostile_inputs.py",
    "tests/insights/test_search_ranking.py",
    "tests/insights/test_clustering_runs.py",
    "tests/serving/test_schemathesis.py",
    "tests/exports/test_pixel_fidelity.py",
    "tests/annotation/test_double_annotation.py",
    "tests/rounds/test_evaluation.py",
    "tests/traces/test_off_screen.py",
    "tests/exports/test_bundle_readme_code.py",
    "tests/access/test_access_layer.py",
    "tests/annotation/test_workspace_long_trace.py",
    "tests/serving/test_demo_generate.py",
    "tests/annotation/test_annotation_workspace_api.py",
    "tests/architecture/test_prescoring_app.py",
    "tests/traces/test_importers.py",
    "tests/exports/test_parquet_images.py",
    "tests/annotation/test_quality_control.py",
    "tests/annotation/test_quality_team.py",
    "tests/exports/test_export_s3.py",
    "tests/jobs/test_worker_memory.py",
    # integration and release tiers (run together by `make test-integration-and-release`, as .ci/run does)
    "tests/annotation/test_browser_accessibility.py",
    "tests/exports/test_training_steps.py",
    "tests/serving/test_backup_drill.py",
    "tests/annotation/test_browser_trust.py",
    "tests/serving/test_outages.py",
    "tests/serving/test_fullstack.py",
    "tests/webhooks/test_webhook_isolation.py",
    "tests/exports/test_export_shards.py",
    "tests/annotation/test_browser_correction_fits.py",
    "tests/annotation/test_browser_workspace.py",
    "tests/annotation/test_browser_layout.py",
    "tests/annotation/test_browser_workspace_layout.py",
    "tests/annotation/test_browser_workspace_feedback.py",
    "tests/access/test_single_sign_on.py",
    "tests/annotation/test_browser_versions.py",
    "tests/serving/test_upgrade_drill.py",
    "tests/serving/test_docs_commands.py",
    "tests/serving/test_deploy_docs.py",
    "tests/serving/test_prometheus.py",
    "tests/webhooks/test_webhooks.py",
    "tests/annotation/test_browser_element_boxes.py",
    "tests/exports/test_llamafactory_preprocessing.py",
    "tests/serving/test_static_production.py",
    "tests/jobs/test_jobs.py",
    "tests/jobs/test_sharded_jobs.py",
    "tests/prescoring/test_prescore_worker.py",
    "tests/rounds/test_browser_weekly_setup.py",
    "tests/serving/test_web_entry_limits.py",
    "tests/serving/test_wheel_install.py",
    "tests/annotation/test_browser_alternatives.py",
    "tests/insights/test_browser_insights.py",
    "tests/traces/test_import_shards.py",
    "tests/review/test_browser_review_edit.py",
    "tests/annotation/test_browser_qualification.py",
    "tests/jobs/test_faults.py",
    "tests/traces/test_browser_lead_pages.py",
    "tests/review/test_browser_quality_dashboard.py",
    "tests/jobs/test_broker_restart.py",
    "tests/annotation/test_browser_keyboard_and_mouse.py",
    "tests/annotation/test_browser_zoom.py",
    "tests/review/test_browser_review.py",
    "tests/architecture/test_tiers.py",
    "tests/serving/test_cli.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # xdist's own reordering (most tests first) would undo the order set here.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def file_order(nodeids: list[str]) -> dict[str, tuple[int, int]]:
    """Each file's place in the queue: those of ``SLOWEST_FILES`` in its order, then the others by their number of
    tests, most first."""
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        path = nodeid.split("::", 1)[0]
        counts[path] = counts.get(path, 0) + 1
    rank = {path: place for place, path in enumerate(SLOWEST_FILES)}
    return {path: (rank.get(path, len(rank)), -count) for path, count in counts.items()}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = file_order([item.nodeid for item in items])
    items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])  # stable: a file's tests keep their order
