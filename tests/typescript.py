"""TypeScript's checker on the page's JavaScript modules: every module in static/js starts with ``// @ts-check`` and
types its interface with JSDoc; ``tsc`` (its version pinned in ``tests/typescript/package.json``, installed once
with npm into ``var/typescript``: tests/npm_packages.py) reads them as tsconfig.json says, emitting nothing.
``make lint`` runs it (``make typecheck-js``); tests/architecture/test_js_types.py checks that it fails on a wrong
module.

    python -m tests.typescript              # installs tsc if needed, checks the modules, exits with tsc's status
    python -m tests.typescript -p FILE      # another project file (a tsconfig), as tsc takes it
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.npm_packages import NpmInstallError, npm_ensure

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "tests" / "typescript" / "package.json"
INSTALL = REPO / "var" / "typescript"
PROJECT = REPO / "tsconfig.json"

__all__ = ["NpmInstallError", "check", "tsc_command"]


def tsc_command() -> list[str]:
    """The command that runs the pinned tsc, installed first if needed."""
    node = shutil.which("node")
    if node is None:
        raise NpmInstallError("node is not installed (Debian's nodejs package; .ci/run installs it)")
    return [node, str(npm_ensure(PACKAGE, INSTALL) / "node_modules" / "typescript" / "bin" / "tsc")]


def check(project: Path = PROJECT) -> subprocess.CompletedProcess:
    """tsc on ``project`` (a tsconfig file): its status (0 when every module checks) and its findings on stdout."""
    return subprocess.run(
        [*tsc_command(), "--pretty", "false", "-p", str(project)],
        cwd=project.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )


def main(argv: list[str]) -> int:
    project = Path(argv[argv.index("-p") + 1]).resolve() if "-p" in argv else PROJECT
    result = check(project)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode == 0:
        print(f"tsc: the modules of {project.relative_to(REPO) if project.is_relative_to(REPO) else project} check")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
