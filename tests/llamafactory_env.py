"""Build, once, the virtualenv in which the tests run LLaMA-Factory's own data preprocessing on a bundle.

    python tests/llamafactory_env.py    # builds var/llamafactory-venv if needed, prints its python

Why a virtualenv of its own: llamafactory (0.9.5, the newest release) cannot sit next to the project's pins. It
requires transformers<=5.6, datasets<=4.0, trl<=0.24 and peft<=0.18.1 (the project has newer ones, for TRL's
trainers), and torchvision and torchaudio, neither of which works with the pinned CPU torch 2.13.0 (torchvision's
compiled operators fail to register; torchaudio's newest wheel, 2.11, is built for torch 2.11). So
this virtualenv gets:

- ``torch==2.13.0``, the project's pin: pip resolves it exactly as ``make install`` does and never picks another
  (multi-gigabyte) torch;
- transformers 4.57: LLaMA-Factory accepts it, and its Qwen2-VL image processor runs on Pillow (5.6's needs
  torchvision);
- ``llamafactory`` and ``torchaudio`` without their dependency lists (no torchvision, gradio, ...). torchaudio's
  compiled kernels are built for torch 2.11 and fail to load with 2.13, so they are deleted: torchaudio then imports
  as a build without its C++ extension, which is all llamafactory needs to import (bundles hold no audio).

Idempotent: a finished build leaves a stamp holding the hash of the pins; a present stamp means reuse, anything
else (other pins, a build cut off halfway) is removed and built again. Standard library only: the project's test
process imports :func:`ensure_venv` without loading anything of LLaMA-Factory.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Under ``STUDIO_TEST_INSTALLS`` when set (tests/installs.py; read here too: this module runs as a script).
VENV = Path(os.environ.get("STUDIO_TEST_INSTALLS") or REPO / "var") / "llamafactory-venv"

TORCH = "torch==2.13.0"  # = pyproject.toml's ml extra
REQUIREMENTS = [
    "transformers==4.57.6",
    "tokenizers==0.22.2",
    "huggingface_hub==0.36.2",
    "datasets==4.0.0",
    "accelerate==1.11.0",
    "peft==0.18.1",
    "trl==0.24.0",
    "omegaconf==2.4.0",
    "PyYAML==6.0.4",
    "pillow==13.0.0",
]
WITHOUT_DEPENDENCIES = ["llamafactory==0.9.5", "torchaudio==2.11.0"]
SMOKE = "import torch, llamafactory.data, llamafactory.hparams, llamafactory.model; print(torch.__version__)"


class VenvBuildError(RuntimeError):
    """The virtualenv could not be built (no package index, a pin that no longer resolves, ...)."""


def pins_digest() -> str:
    pins = {"python": sys.version_info[:2], "torch": TORCH, "deps": REQUIREMENTS, "nodeps": WITHOUT_DEPENDENCIES}
    return hashlib.sha256(json.dumps(pins, sort_keys=True).encode()).hexdigest()[:16]


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def _run(command: list[str], *, what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()[-4000:]
        raise VenvBuildError(f"{what} failed (exit {result.returncode}): {' '.join(command)}\n{output}")
    return result.stdout


def ensure_venv(venv: Path = VENV, *, log=print) -> Path:
    """The virtualenv's python, building the virtualenv first unless a finished build with these pins is there."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    # Two test runs at once (SQLite and PostgreSQL in one checkout) build it once: the second waits, then reuses it.
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_unless_built(venv, log=log)


def _build_unless_built(venv: Path, *, log) -> Path:
    stamp = venv / f".built-{pins_digest()}"
    if stamp.exists():
        return python_of(venv)
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    # From a virtualenv's python, `-m venv` bases the new one on the same interpreter installation.
    _run([sys.executable, "-m", "venv", str(venv)], what="creating the virtualenv")
    pip = [str(python_of(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, TORCH, *REQUIREMENTS], what="installing torch and LLaMA-Factory's libraries")
    _run([*pip, "--no-deps", *WITHOUT_DEPENDENCIES], what="installing llamafactory and torchaudio")
    site_packages = _run(
        [str(python_of(venv)), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        what="locating site-packages",
    ).strip()
    for kernel in (Path(site_packages) / "torchaudio" / "lib").glob("*.so"):
        kernel.unlink()
    torch_version = _run([str(python_of(venv)), "-c", SMOKE], what="importing llamafactory").strip()
    if torch_version.split("+")[0] != TORCH.split("==")[1]:
        raise VenvBuildError(f"the virtualenv got torch {torch_version}, not the pinned {TORCH}")
    stamp.write_text(f"built in {time.monotonic() - started:.0f} s\n")
    log(f"built {venv} in {time.monotonic() - started:.0f} s")
    return python_of(venv)


if __name__ == "__main__":
    try:
        print(ensure_venv(log=lambda message: print(message, file=sys.stderr)))
    except VenvBuildError as error:
        sys.exit(str(error))
