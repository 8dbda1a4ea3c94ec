"""Where the tests' own installs go (LLaMA-Factory's virtualenv, tests/llamafactory_env.py; the node packages,
tests/npm_packages.py): ``var/`` in the checkout, or the folder ``STUDIO_TEST_INSTALLS`` names. ``.ci/run`` names
one in the machine's cache, so a fresh clone reuses what the run before it installed instead of installing it again
(LLaMA-Factory's virtualenv alone is most of two minutes). Each install is stamped with a digest of its pins and made
again when they change; a lock beside it lets one process install while the others wait."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def installs_dir() -> Path:
    return Path(os.environ.get("STUDIO_TEST_INSTALLS") or REPO / "var")
