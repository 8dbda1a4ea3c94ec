"""The OpenID Connect provider the sign-in tests run: node-oidc-provider (``tests/serving/oidc/provider.mjs``, its
version pinned in ``tests/serving/oidc/package.json``), installed once with npm into ``var/oidc-provider`` (ignored
by git; a change of the package file installs it again) and started on a loopback port per test.

    python tests/oidc_provider.py    # installs it if needed, prints the folder
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from tests.processes import ReadyLineProcess

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "serving" / "oidc"
INSTALL = REPO / "var" / "oidc-provider"


class ProviderInstallError(RuntimeError):
    """npm could not install the provider (no package registry reachable, no node)."""


def ensure_installed(folder: Path = INSTALL) -> Path:
    """The folder holding provider.mjs and its node_modules, installed first unless this package file's are there."""
    package = (SOURCE / "package.json").read_bytes()
    stamp = folder / f".installed-{hashlib.sha256(package).hexdigest()[:16]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / "oidc-provider.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            (folder / "package.json").write_bytes(package)
            npm = shutil.which("npm")
            if npm is None:
                raise ProviderInstallError("npm is not installed (node 20 and npm are needed for the provider)")
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--omit=dev"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if result.returncode != 0:
                raise ProviderInstallError(f"npm install failed:\n{(result.stdout + result.stderr)[-3000:]}")
            stamp.write_text("installed\n")
        shutil.copyfile(SOURCE / "provider.mjs", folder / "provider.mjs")
    return folder


class Provider(ReadyLineProcess):
    """One running provider: ``issuer``; ``accounts`` and ``wrong_audience`` are written to its file, which it reads
    at every sign-in (``update()`` after changing them)."""

    def __init__(self, folder: Path, port: int, config_path: Path, clients: list[dict]):
        super().__init__()
        self.folder, self.port, self.config_path = folder, port, config_path
        self.issuer = f"http://127.0.0.1:{port}"
        self.clients = clients
        self.accounts: dict[str, dict] = {}
        self.wrong_audience: list[str] = []

    def update(self) -> None:
        data = {"clients": self.clients, "accounts": self.accounts, "wrong_audience": self.wrong_audience}
        partial = self.config_path.with_suffix(".partial")
        partial.write_text(json.dumps(data))
        partial.replace(self.config_path)

    def start(self, timeout: float = 30) -> Provider:
        self.update()
        self.launch(
            ["node", "provider.mjs", str(self.port), str(self.config_path)],
            ready_text="provider ready",
            what="the OpenID Connect provider",
            timeout=timeout,
            cwd=self.folder,
        )
        return self


if __name__ == "__main__":
    print(ensure_installed())
