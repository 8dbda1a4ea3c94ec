"""Complex functions only get fewer: ruff's C901 (pyproject's ``max-complexity``) refuses any function past the most
complex one today, and this test counts the functions whose McCabe complexity is over 10 (ruff's measure) against a
ceiling that only falls. Split a function and the count drops: lower ``MOST_OVER_10`` with it."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO

OVER = 10
MOST_OVER_10 = 55

TOO_COMPLEX = re.compile(r"C901 `(?P<name>[^`]+)` is too complex \((?P<complexity>\d+) > \d+\)")


def over(complexity: int, *paths: str) -> list[str]:
    """``path:line name (complexity)`` for each function of ``paths`` more complex than ``complexity``."""
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "C901", "--output-format", "concise", "--no-cache"]
        + ["--config", f"lint.mccabe.max-complexity = {complexity}", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert found.returncode in (0, 1), found.stderr
    return [line for line in found.stdout.splitlines() if TOO_COMPLEX.search(line)]


def test_the_functions_over_10_are_no_more_than_before():
    found = over(OVER, ".")
    assert len(found) <= MOST_OVER_10, (
        f"{len(found)} functions are more complex than {OVER} (at most {MOST_OVER_10}): split the new one\n"
        + "\n".join(found)
    )


def test_control_a_function_over_10_is_counted(tmp_path):
    branches = "\n".join(f"    if x == {n}:\n        return {n}" for n in range(11))
    (tmp_path / "branchy.py").write_text(f"def branchy(x):\n{branches}\n    return -1\n")
    (found,) = over(OVER, str(tmp_path / "branchy.py"))
    assert TOO_COMPLEX.search(found).group("name") == "branchy"
    assert over(OVER + 2, str(tmp_path / "branchy.py")) == []
