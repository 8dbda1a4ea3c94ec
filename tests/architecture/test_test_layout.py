"""The suite's own layout: a folder of tests is a package on ``sys.path`` whenever a script in ``tests/`` runs (the
LLaMA-Factory helpers run as ``python tests/llamafactory_labels.py``, which puts ``tests/`` first), so a folder named
like a standard-library module hides that module from the script and from everything it imports."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def shadowing(folders: list[str]) -> list[str]:
    return sorted(name for name in folders if name in sys.stdlib_module_names)


def test_no_test_folder_hides_a_standard_library_module():
    folders = [p.name for p in TESTS.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert len(folders) >= 10, folders
    assert shadowing(folders) == []


def test_the_rule_sees_a_folder_that_would_hide_one():
    assert shadowing(["serving", "platform", "traces", "json"]) == ["json", "platform"]
