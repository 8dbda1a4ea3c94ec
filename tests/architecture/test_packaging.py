"""A non-editable install ships every package the studio imports at start: each installed app that lives in this
repository is matched by pyproject's package list (an app left out installs a studio whose start fails with
ModuleNotFoundError)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from django.conf import settings

REPO = Path(__file__).resolve().parent.parent.parent


def packaged(module: str, include: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(module, pattern) for pattern in include)


def own_apps() -> list[str]:
    """The installed apps' top-level packages that are folders of this repository."""
    tops = {app.split(".")[0] for app in settings.INSTALLED_APPS}
    return sorted(top for top in tops if (REPO / top / "__init__.py").is_file())


def test_every_app_of_the_repository_is_in_the_package_list():
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    apps = own_apps()
    assert "studio" in apps and "insights" in apps, apps
    assert [app for app in apps if not packaged(app, include)] == []


def test_control_an_app_missing_from_the_list_is_found():
    assert not packaged("insights", ["studio*", "traces*"])
    assert packaged("insights.jobs", ["insights*"])
