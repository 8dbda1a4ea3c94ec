"""The export page's quality bar: "leave out annotators whose gold accuracy is below" goes to the export as its
``min_gold_accuracy`` option, the list of exports says it, and a bar that is no share is refused on the form with
what was typed kept."""

from __future__ import annotations

import pytest

from exports.models import ExportJob

pytestmark = pytest.mark.django_db


def test_the_bar_reaches_the_export_and_its_row(project, engineer, client):
    client.force_login(engineer)
    form = client.get("/exports/").content.decode()
    assert 'name="min_gold_accuracy"' in form and 'id="min-gold-accuracy-help"' in form
    answer = client.post("/exports/", {"project": project.pk, "format": "trl", "min_gold_accuracy": "0.8"})
    job = ExportJob.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/exports/{job.pk}/"
    assert job.options["min_gold_accuracy"] == 0.8
    assert "annotators below 80% gold accuracy left out" in client.get("/exports/").content.decode()


def test_an_export_without_a_bar_names_none(project, engineer, client):
    client.force_login(engineer)
    client.post("/exports/", {"project": project.pk, "format": "trl", "min_gold_accuracy": ""})
    assert "min_gold_accuracy" not in ExportJob.objects.get().options


@pytest.mark.parametrize("typed", ["1.5", "0", "most"])
def test_a_bar_that_is_no_share_is_refused_on_the_form(project, engineer, client, typed):
    client.force_login(engineer)
    refused = client.post("/exports/", {"project": project.pk, "format": "trl", "min_gold_accuracy": typed})
    page = refused.content.decode()
    assert refused.status_code == 400 and "min_gold_accuracy" in page
    assert f'value="{typed}"' in page  # what was typed stays
    assert not ExportJob.objects.exists()
