"""Each app's page rules live beside its ``urls.py``: a page's URL name is given an action (``AppAccess.pages``) by
the ``permissions`` module of the package whose ``urls.py`` names it (traces/urls.py's pages in traces/permissions.py,
annotation/review/urls.py's in annotation/review/permissions.py, studio/urls.py's in studio/permissions.py), so a new
page and its rule are written side by side. studio.permissions gathers the parts into the one table; the gathering
refuses an action or a page declared twice. Each rule has a control."""

from __future__ import annotations

import subprocess
from importlib import import_module

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern

from studio.catalog import gettext_noop
from studio.permissions import ALL, PAGE_PERMISSIONS, AppAccess, Rule, Scope, access_gather, apps_access
from tests.conftest import REPO


def urls_packages() -> list[str]:
    """The packages with a ``urls.py`` of pages (studio's own included)."""
    out = subprocess.run(["git", "ls-files", "*urls.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return sorted(
        path[: -len("/urls.py")].replace("/", ".") for path in out.stdout.split() if path.endswith("/urls.py")
    )


def named_pages(package: str) -> set[str]:
    """The URL names ``package``'s own ``urls.py`` gives to pages (not those of the modules it includes)."""
    patterns = import_module(f"{package}.urls").urlpatterns
    return {p.name for p in patterns if isinstance(p, URLPattern) and p.name in PAGE_PERMISSIONS}


def declared_pages(package: str) -> set[str]:
    """The page names ``package``'s ``permissions`` module declares (none without one)."""
    try:
        module = import_module(f"{package}.permissions")
    except ModuleNotFoundError:
        return set()
    access = getattr(module, "ACCESS", None)
    return set(access.pages) if isinstance(access, AppAccess) else set()


def misplaced(named_by: dict[str, set[str]], declared_by: dict[str, set[str]]) -> list[str]:
    """``package: page`` for each page a package's urls.py names whose rule its permissions module does not hold."""
    return sorted(
        f"{package}: {name}" for package, names in named_by.items() for name in names - declared_by.get(package, set())
    )


def test_each_page_rule_lives_beside_the_urls_that_name_the_page():
    packages = urls_packages()
    assert {"studio", "traces", "annotation", "annotation.review", "exports"} <= set(packages)
    named_by = {package: named_pages(package) for package in packages}
    assert "trace-detail" in named_by["traces"] and "review-queue" in named_by["annotation.review"]
    assert misplaced(named_by, {package: declared_pages(package) for package in packages}) == []
    # Every page of every urls.py is some package's: nothing is left to a table elsewhere.
    assert set().union(*named_by.values()) == set(PAGE_PERMISSIONS)


def test_every_installed_app_with_pages_has_its_part_in_the_table():
    labels = {label for label, _ in apps_access()}
    assert {"studio", "traces", "prescoring", "annotation", "exports", "evaluation", "webhooks", "insights"} <= labels
    assert "replays" in labels


def test_control_a_page_rule_declared_away_from_its_urls_is_found():
    named_by = {"traces": {"trace-detail", "trace-list"}, "exports": {"export-home"}}
    declared_by = {"traces": {"trace-list", "export-home"}, "exports": set()}
    assert misplaced(named_by, declared_by) == ["exports: export-home", "traces: trace-detail"]


def test_control_an_action_or_a_page_declared_twice_is_refused():
    rule = Rule(ALL, Scope.MEMBER, gettext_noop("see this project"))
    with pytest.raises(ImproperlyConfigured, match="project.view"):
        access_gather(
            [("one", AppAccess(rules={"project.view": rule})), ("two", AppAccess(rules={"project.view": rule}))]
        )
    with pytest.raises(ImproperlyConfigured, match="trace-list"):
        AppAccess(pages={"trace-list": "trace.view"}).joined(AppAccess(pages={"trace-list": "trace.view"}))
