"""Write the demo traces to disk in the native trace format (``trace-studio/v1``).

One folder per trace::

    <out_dir>/<external_id>/trace.json
    <out_dir>/<external_id>/step_001.png ...   (o_i, the screen before step i's action)
    <out_dir>/<external_id>/final.png          (the screen after the last action)

Deterministic: the same seed gives byte-identical PNG and JSON files (PNG written without metadata, JSON with
sorted keys). Run ``python -m demo.generate OUT_DIR [--seed N] [--previews DIR]``.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from .screens import Screen, make_file_system, render_files, render_phone, render_settings, render_web
from .scripts import TraceScript, build_scripts, format_action

FORMAT = "trace-studio/v1"
GENERATOR = "trace-studio demo"


@dataclass
class DemoTrace:
    folder: Path
    platform: str  # desktop | mobile | web
    annotation: dict[str, Any] | None  # {"verdict": "error", "tau": ...} or {"verdict": "no_error"}
    external_id: str = ""
    instruction: str = ""


def _save_png(image: Image.Image, path: Path) -> None:
    image.save(path, format="PNG", optimize=False)


def _dump_json(data: Any, path: Path) -> None:
    path.write_text(json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _clear_owned_files(folder: Path) -> None:
    """Remove what a previous run wrote here (a trace may have had more steps then)."""
    for p in list(folder.glob("step_*.png")) + [folder / "final.png", folder / "trace.json"]:
        if p.is_file():
            p.unlink()


def write_trace(script: TraceScript, folder: Path, seed: int) -> DemoTrace:
    folder.mkdir(parents=True, exist_ok=True)
    _clear_owned_files(folder)
    screens: dict[int, Screen] = {}
    steps = []
    for i, step in enumerate(script.steps, start=1):
        screen = step.screen.render()
        screens[i] = screen
        name = f"step_{i:03d}.png"
        _save_png(screen.image, folder / name)
        steps.append({"screenshot": name, "thought": step.thought, "action": format_action(step.act, screen)})
    final_name = None
    if script.final is not None:
        final = script.final.render()
        screens[len(script.steps) + 1] = final
        final_name = "final.png"
        _save_png(final.image, folder / final_name)
    trace = {
        "format": FORMAT,
        "external_id": script.external_id,
        "instruction": script.instruction,
        "platform": script.platform,
        "source": "demo",
        "outcome": script.outcome,
        "metadata": {"app": script.app, "generator": GENERATOR, "seed": seed},
        "final_screenshot": final_name,
        "steps": steps,
    }
    _dump_json(trace, folder / "trace.json")
    return DemoTrace(
        folder=folder,
        platform=script.platform,
        annotation=script.annotation_dict(screens),
        external_id=script.external_id,
        instruction=script.instruction,
    )


def write_demo_traces(out_dir: Path, seed: int = 7) -> list[DemoTrace]:
    """Render every demo trace into ``out_dir/<external_id>/`` and return them with their demo annotations."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_trace(script, out_dir / script.external_id, seed) for script in build_scripts(seed)]


def preview_screens(seed: int = 7) -> dict[str, Screen]:
    """One screen of each distinct kind and state family, for eyeballing the renderers."""
    fs = make_file_system(random.Random(seed))
    docs_fs = {**fs, "Documents": [e for e in fs["Documents"] if e["name"] != "draft_v2.docx"]}
    form = {"name": "Maria Lopez", "organization": "", "email": "maria.lopez@example.com", "track": "Data Science"}
    return {
        "settings_wifi": render_settings({"page": "wifi"}),
        "settings_bluetooth": render_settings({"page": "bluetooth"}),
        "settings_display": render_settings({"page": "display", "brightness": 80, "night_light": True}),
        "settings_appearance_dark": render_settings({"page": "appearance", "dark_mode": True, "accent": "green"}),
        "settings_notifications": render_settings({"page": "notifications"}),
        "settings_power": render_settings({"page": "power"}),
        "files_home_grid": render_files({"fs": fs}),
        "files_folder_menu": render_files({"fs": fs, "selected": "Downloads", "context_menu": {"target": "Downloads"}}),
        "files_documents_menu": render_files(
            {"fs": fs, "folder": "Documents", "selected": "draft_v2.docx", "context_menu": {"target": "draft_v2.docx"}}
        ),
        "files_rename": render_files(
            {"fs": fs, "folder": "Documents", "selected": "draft_v2.docx", "renaming": "draft_v2.docx"}
        ),
        "files_deleted_toast": render_files(
            {"fs": docs_fs, "folder": "Documents", "toast": "\u201cdraft_v2.docx\u201d moved to Trash"}
        ),
        "files_search_empty": render_files({"fs": docs_fs, "folder": "Documents", "search": "report_final.docx"}),
        "web_form_empty": render_web({}),
        "web_form_dropdown": render_web({"values": {"name": "Maria Lopez"}, "dropdown_open": True}),
        "web_form_filled": render_web({"values": form, "terms": True, "focus": "email"}),
        "web_form_error": render_web(
            {
                "values": {**form, "email": ""},
                "terms": True,
                "errors": {"email": "Please enter your email address."},
                "banner": "Please fix the highlighted field before registering.",
            }
        ),
        "web_success": render_web({"page": "success", "values": form}),
        "phone_home": render_phone({"screen": "home"}),
        "phone_drawer": render_phone({"screen": "drawer"}),
        "phone_settings": render_phone({"screen": "settings"}),
        "phone_bluetooth_on": render_phone(
            {"screen": "connected_devices", "bt_on": True, "scanning": True, "found": 1}
        ),
        "phone_messages": render_phone({"screen": "messages"}),
        "phone_conversation_keyboard": render_phone(
            {"screen": "conversation", "keyboard": True, "draft": "Running 10 minutes late, start without me"}
        ),
    }


def write_previews(out_dir: Path, seed: int = 7) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, screen in preview_screens(seed).items():
        path = out_dir / f"{name}.png"
        _save_png(screen.image, path)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--previews", type=Path, help="also render one PNG per screen type here")
    args = ap.parse_args(argv)
    for t in write_demo_traces(args.out_dir, args.seed):
        ann = t.annotation or {}
        print(f"{t.folder}  {t.platform}  {ann.get('verdict')}  tau={ann.get('tau', '-')}")
    if args.previews:
        write_previews(args.previews, args.seed)


if __name__ == "__main__":  # pragma: no cover
    main()
