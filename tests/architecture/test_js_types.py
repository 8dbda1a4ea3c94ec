"""The page's JavaScript is type-checked: every module in static/js starts with ``// @ts-check`` (its JSDoc types are
then read), and TypeScript's checker (``make typecheck-js``, run by ``make lint``: tests/typescript.py) refuses a
module that reads a property its type lacks, on a DOM element or on what a module's function returns. The project's own
check runs in ``make lint``; here the checker is shown to fail on a wrong module and to pass its fix."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.typescript import PROJECT, check

REPO = Path(__file__).resolve().parent.parent.parent
JS = REPO / "static" / "js"


def unchecked(modules: Iterable[Path]) -> list[str]:
    """The modules whose first line is not ``// @ts-check`` (the checker leaves them alone)."""
    return sorted(path.name for path in modules if not path.read_text(encoding="utf-8").startswith("// @ts-check\n"))


def test_every_page_module_asks_to_be_checked():
    modules = list(JS.rglob("*.js"))
    assert len(modules) > 30, modules
    assert unchecked(modules) == []


def test_control_a_module_without_the_line_is_found(tmp_path):
    (tmp_path / "plain.js").write_text("/* no check asked for */\nexport const x = 1;\n")
    (tmp_path / "checked.js").write_text("// @ts-check\nexport const x = 1;\n")
    assert unchecked(tmp_path.glob("*.js")) == ["plain.js"]


@pytest.mark.heavy  # tsc reads the DOM's whole type library: seconds of a loaded machine
def test_the_checker_refuses_a_wrong_module_and_passes_its_fix(tmp_path):
    """One run of tsc, with the project's settings, over a wrong module and its fix beside it (both import a module
    of static/js): the run fails, and only on the wrong module's two reads (TS2339 and TS2551: a property the type
    lacks, the second with tsc's guess of the one meant)."""
    values = (JS / "values.js").as_posix()
    body = '// @ts-check\nimport {{ copy }} from "{values}";\n/** @param {{HTMLElement}} node */\nexport const f = (node) => [node.{field}, copy({value}).toFixed()];\n'
    # An element has no colour, and a copy of a string (values.js's JSDoc: the copy has its value's type) no toFixed.
    (tmp_path / "wrong.js").write_text(body.format(values=values, field="colour", value='"1"'))
    (tmp_path / "right.js").write_text(body.format(values=values, field="hidden", value="1"))
    config = tmp_path / "tsconfig.json"
    config.write_text(json.dumps({"extends": str(PROJECT), "include": ["*.js"]}))
    result = check(config)
    assert result.returncode != 0, result.stdout
    found = re.findall(r"^(\S+?)\((\d+),\d+\): error (TS\d+)", result.stdout, re.MULTILINE)
    assert sorted(found) == [("wrong.js", "4", "TS2339"), ("wrong.js", "4", "TS2551")], result.stdout
