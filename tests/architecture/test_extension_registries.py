"""An export format and a trace layout are each one module: a toy format and a toy importer, written into a
temporary folder that the registries' packages are given (as a new module in exports/formats/ or
traces/importers/ would be), show up in the API's lists, the pages' menus, the command line's list, a job's label,
the bundle (its data files, README and manifest) and the import, with no other file changed."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import zipfile

import pytest
from django.core.management import call_command

from exports import formats
from exports.models import ExportJob
from exports.services import export_to_path
from studio.security import api_token_issue
from tests.conftest import REPO
from tests.fixtures_export import REPLIES, accepted_error, make_trace, png
from traces import importers
from traces.api import ImportUploadSerializer, TracePushSerializer
from traces.importers import registry
from traces.models import Trace

TOY_FORMAT = '''
from exports.bundle import ReadmeText
from exports.formats import ExportFormat, register
from exports.writers import Writer


class ToyLinesWriter(Writer):
    """One line per SFT or DPO sample: its kind, then its target."""

    suffix = ".txt"
    uses_image_folder = False

    def write(self, handle, sample, *, first):
        target = (sample.completion or sample.chosen).replace("\\n", " ")
        handle.write(f"{sample.kind}\\t{target}\\n")

    def manifest_sections(self):
        return {"toy": {"columns": ["kind", "target"]}}


register(
    ExportFormat(
        name="toy-lines",
        label="Toy lines (kind and target, tab-separated)",
        writer=ToyLinesWriter,
        readme=ReadmeText(
            training=lambda facts: "## Read the toy lines\\n" + ", ".join(facts.data_files) + ": "
            + " and ".join(facts.sections["toy"]["columns"]) + " on each line.\\n",
            limit_goes="the toy trainer's `max_len`",
        ),
    )
)
'''

TOY_IMPORTER = '''
from traces.importers.base import ImageRef, ImportedStep, ImportedTrace, UnitImporter
from traces.importers.registry import register


class ToyLinesImporter(UnitImporter):
    """A folder per trace: toy.txt holds the instruction, then a line per step, "thought | action"; step k's
    screenshot is k.png."""

    format_name = "toy-lines"
    label = "Toy lines (toy.txt and numbered screenshots)"

    def detect(self, root):
        return root.is_dir() and any(root.glob("*/toy.txt"))

    def units(self, root):
        return sorted(path.parent for path in root.glob("*/toy.txt"))

    def read_units(self, root, units):
        for folder in units:
            instruction, *lines = (folder / "toy.txt").read_text(encoding="utf-8").splitlines()
            steps = []
            for k, line in enumerate(lines, start=1):
                thought, action = line.split(" | ")
                shot = ImageRef.from_path(folder / f"{k}.png", root=root)
                steps.append(ImportedStep(screenshot=shot, raw_response=f"Thought: {thought}\\nAction: {action}"))
            yield ImportedTrace(
                external_id=folder.name, instruction=instruction, source=self.format_name, steps=steps
            )


register(ToyLinesImporter())
'''


def _package_with(package, module_name: str, source: str, folder, monkeypatch) -> None:
    """Give ``package`` one more module, ``module_name``, in ``folder`` (a path of the package, as its own folder
    is), then let the registry discover it; the fixture's teardown takes it out again."""
    folder.mkdir()
    (folder / f"{module_name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    importlib.invalidate_caches()


@pytest.fixture
def toy_format(tmp_path, monkeypatch):
    _package_with(formats, "toy_lines_format", TOY_FORMAT, tmp_path / "formats", monkeypatch)
    formats.discover()
    yield formats.export_format("toy-lines")
    formats.unregister("toy-lines")
    sys.modules.pop("exports.formats.toy_lines_format", None)


@pytest.fixture
def toy_importer(tmp_path, monkeypatch):
    _package_with(importers, "toy_lines_importer", TOY_IMPORTER, tmp_path / "importers", monkeypatch)
    registry.discover()
    yield importers.IMPORTERS["toy-lines"]
    registry.unregister("toy-lines")
    sys.modules.pop("traces.importers.toy_lines_importer", None)


def _cli(live_server, token: str, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "TRACE_STUDIO_URL": live_server.url, "TRACE_STUDIO_TOKEN": token}
    result = subprocess.run(
        [sys.executable, "-m", "trace_studio_cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def test_the_registries_hold_the_studios_formats_and_layouts():
    assert formats.format_names() == ["trl", "llamafactory", "parquet", "prm", "verl"]
    # Detection tries the loosest layout (native: any *.jsonl) last.
    assert [i.format_name for i in importers.importers_in_detect_order()] == [
        "uitars-messages",
        "osworld",
        "screenagent",
        "mobile-agent",
        "native",
    ]
    with pytest.raises(formats.UnknownFormat, match="unknown format 'csv'; use one of trl, llamafactory"):
        formats.export_format("csv")


@pytest.mark.django_db
def test_a_format_module_reaches_the_api_the_page_the_job_and_the_bundle(
    toy_format, project, annotator, lead, engineer, api_client, client, tmp_path
):
    listed = api_client(engineer).get("/api/exports/formats/")
    assert listed.status_code == 200
    assert {"name": "toy-lines", "label": toy_format.label, "sample_set": "sft_dpo", "suffix": ".txt"} in listed.json()

    client.force_login(engineer)
    page = client.get("/exports/")
    assert f'<option value="toy-lines">{toy_format.label}</option>' in page.content.decode()

    trace = make_trace(project, replies=REPLIES, external_id="toy-1")
    accepted_error(trace, annotator=annotator, reviewer=lead, tau=3, error_category=project.error_categories[0])
    queued = api_client(engineer).post(f"/api/projects/{project.pk}/exports/", {"format": "toy-lines"}, format="json")
    assert queued.status_code == 202, queued.json()
    assert ExportJob.objects.get(pk=queued.json()["id"]).get_format_display() == toy_format.label
    refused = api_client(engineer).post(f"/api/projects/{project.pk}/exports/", {"format": "csv"}, format="json")
    assert refused.status_code == 400 and "format" in refused.json()

    out = tmp_path / "toy.zip"
    export_to_path(project=project, user=engineer, fmt="toy-lines", options={"validation_fraction": 0}, out=out)
    with zipfile.ZipFile(out) as bundle:
        names = bundle.namelist()
        readme = bundle.read("README.md").decode()
        manifest = json.loads(bundle.read("manifest.json"))
        lines = bundle.read("data/sft/train-00000-of-00001.txt").decode().splitlines()
    assert "data/dpo/train-00000-of-00001.txt" in names
    assert not any(name.startswith("images/") for name in names)  # the writer keeps no image folder
    assert {line.split("\t")[0] for line in lines} == {"error_correction", "post_reflection"}
    assert "## Read the toy lines\ndata/dpo/train-00000-of-00001.txt, data/sft/train-00000-of-00001.txt: kind" in readme
    assert "set the toy trainer's `max_len` to at least" in readme
    assert manifest["format"] == "toy-lines" and manifest["toy"] == {"columns": ["kind", "target"]}


@pytest.mark.django_db
def test_an_importer_module_reaches_the_api_the_page_and_the_import(
    toy_importer, project, lead, api_client, client, tmp_path
):
    listed = api_client(lead).get("/api/imports/formats/")
    assert listed.status_code == 200
    names = [row["name"] for row in listed.json()]
    assert names[-2:] == ["toy-lines", "native"]  # tried after the stricter layouts, before the loosest
    assert {"name": "toy-lines", "label": toy_importer.label} in listed.json()
    # The upload's and the push's format fields take it (the page's form is checked against the registry too).
    assert "toy-lines" in ImportUploadSerializer().fields["format"].choices
    assert "toy-lines" in TracePushSerializer().fields["format"].choices

    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/import/")
    assert f'<option value="toy-lines">{toy_importer.label} (toy-lines)</option>' in page.content.decode()

    root = tmp_path / "upload"
    folder = root / "toy-trace"
    folder.mkdir(parents=True)
    (folder / "toy.txt").write_text(
        "Open the settings\nOpen the start menu. | click(start_box='(10,990)')\nType it. | type(content='display')\n",
        encoding="utf-8",
    )
    for k in (1, 2):
        (folder / f"{k}.png").write_bytes(png(k))
    assert importers.detect_format(root) == "toy-lines"
    call_command("import_traces", str(root), project=project.name)
    trace = Trace.objects.get(project=project, external_id="toy-trace")
    assert trace.source == "toy-lines"
    assert [step.action_text for step in trace.steps.order_by("index")] == [
        "click(start_box='(10,990)')",
        "type(content='display')",
    ]


def test_the_command_line_lists_what_the_server_declares(toy_format, toy_importer, live_server, engineer):
    shown = _cli(live_server, api_token_issue(user=engineer), "formats")
    assert f"  toy-lines       {toy_format.label}" in shown
    assert f"  toy-lines       {toy_importer.label}" in shown
    listed = json.loads(_cli(live_server, api_token_issue(user=engineer), "formats", "--json"))
    assert [f["name"] for f in listed["exports"]][-1] == "toy-lines"
