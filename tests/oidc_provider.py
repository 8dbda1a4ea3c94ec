"""The OpenID Connect provider the sign-in tests run: node-oidc-provider (``tests/serving/oidc/provider.mjs``, its
version pinned in ``tests/serving/oidc/package.json``), installed once with npm into ``var/oidc-provider`` (ignored
by git; a change of the package file installs it again) and started on a loopback port per test.

    python tests/oidc_provider.py    # installs it if needed, prints the folder
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.installs import installs_dir
from tests.npm_packages import NpmInstallError, npm_ensure
from tests.processes import ReadyLineProcess

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "serving" / "oidc"
INSTALL = installs_dir() / "oidc-provider"


# npm could not install the provider (no package registry reachable, no node).
ProviderInstallError = NpmInstallError


def ensure_installed(folder: Path = INSTALL) -> Path:
    """The folder holding provider.mjs and its node_modules, installed first unless this package file's are there."""
    npm_ensure(SOURCE / "package.json", folder)
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
