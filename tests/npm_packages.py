"""Node packages the tests run, each pinned in a package file of the repository and installed once with npm into a
folder under ``var/`` (ignored by git), or under ``STUDIO_TEST_INSTALLS`` when set (tests/installs.py); a change of the
package file installs it again: the OpenID Connect provider (tests/oidc_provider.py), axe-core (tests/axe_core.py)."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path


class NpmInstallError(RuntimeError):
    """npm could not install a package (no package registry reachable, no node)."""


def npm_ensure(package_file: Path, folder: Path) -> Path:
    """``folder`` with ``package_file`` and its node_modules, installed first unless this package file's are there.
    Installs run one at a time (a lock beside the folder), so parallel test processes install once."""
    package = package_file.read_bytes()
    stamp = folder / f".installed-{hashlib.sha256(package).hexdigest()[:16]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            (folder / "package.json").write_bytes(package)
            npm = shutil.which("npm")
            if npm is None:
                raise NpmInstallError(f"npm is not installed (node 20 and npm are needed for {package_file})")
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--omit=dev"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if result.returncode != 0:
                raise NpmInstallError(f"npm install failed:\n{(result.stdout + result.stderr)[-3000:]}")
            stamp.write_text("installed\n")
    return folder
