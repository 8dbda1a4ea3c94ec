"""The suite's tiers (tests/tiers.py): every collected test runs in exactly one of them, and CI runs all three."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO
from tests.tiers import TIER_MARKERS, TIERS, selected, tier_of


def partition_problems(collected: set[str], by_tier: dict[str, set[str]]) -> list[str]:
    """What keeps ``by_tier`` from being a partition of ``collected``: tests in no tier, in two, or unknown."""
    problems = []
    seen: dict[str, str] = {}
    for tier, tests in by_tier.items():
        for test in sorted(tests):
            if test in seen:
                problems.append(f"{test} runs in {seen[test]} and {tier}")
            seen[test] = tier
    problems += [f"{test} runs in no tier" for test in sorted(collected - seen.keys())]
    problems += [f"{test} is not collected" for test in sorted(seen.keys() - collected)]
    return problems


def test_a_test_goes_to_the_latest_tier_its_markers_name():
    assert tier_of([]) == "test"
    assert tier_of(["django_db", "parametrize"]) == "test"
    assert tier_of(["browser"]) == tier_of(["worker"]) == tier_of(["subprocess"]) == "integration"
    assert tier_of(["training"]) == tier_of(["compiler"]) == "integration"
    assert tier_of(["fullstack"]) == tier_of(["llamafactory"]) == "release"
    assert tier_of(["browser", "fullstack"]) == "release"


def test_every_registered_marker_has_its_tier():
    """A marker added to pyproject without a tier would leave its tests in `make test`: name its tier here."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    registered = {line.split(":", 1)[0] for line in pyproject["tool"]["pytest"]["ini_options"]["markers"]}
    assert registered == set().union(*TIER_MARKERS.values())


def make_targets_tiers(makefile: str) -> dict[str, set[str]]:
    """Each Makefile target that runs pytest with ``--tier``: the tiers it names."""
    targets = {}
    for target, recipe in re.findall(r"^([\w-]+): install\n\t\$\(PYTEST\) ([^\n]*)", makefile, re.M):
        targets[target] = set(re.findall(r"--tier (\w+)", recipe))
    return targets


def tiers_ci_runs(makefile: str, ci: str) -> set[str]:
    targets = make_targets_tiers(makefile)
    run = re.findall(r"^make ([\w -]+)$", ci, re.M)
    return set().union(*(targets.get(target, set()) for line in run for target in line.split()))


def test_ci_runs_every_tier():
    makefile = (REPO / "Makefile").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert tiers_ci_runs(makefile, ci) == set(TIERS)
    assert "make test\n" in ci  # the README's second command, as it is


def test_the_ci_check_sees_a_tier_left_out():
    makefile = (
        "test: install\n\t$(PYTEST) --tier test $(X)\nslow: install\n\t$(PYTEST) --tier integration --tier release\n"
    )
    assert tiers_ci_runs(makefile, "make lint\nmake test\nmake slow\n") == {"test", "integration", "release"}
    assert tiers_ci_runs(makefile, "make lint\nmake test\n") == {"test"}


def test_the_partition_check_finds_a_test_in_no_tier_and_one_in_two():
    collected = {"a", "b", "c"}
    assert partition_problems(collected, {"test": {"a"}, "integration": {"b"}, "release": {"c"}}) == []
    assert partition_problems(collected, {"test": {"a"}, "integration": {"b"}, "release": set()}) == [
        "c runs in no tier"
    ]
    assert partition_problems(collected, {"test": {"a", "b"}, "integration": {"b"}, "release": {"c"}}) == [
        "b runs in test and integration"
    ]


# Collected once, in a child process (pytest-django's settings in this one are the test run's): the child lists every
# collected test with the tier tests/tiers.py gave it, and each tier's selection is the one ``--tier`` makes.
LIST_TIERS = """
import json, sys
import pytest
from tests.tiers import COLLECTED_TIERS

class Listing:
    def pytest_collection_finish(self, session):
        self.listed = {"collected": [item.nodeid for item in session.items], "tiers": session.config.stash[COLLECTED_TIERS]}

listing = Listing()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"], plugins=[listing])
with open(sys.argv[1], "w") as out:
    json.dump(listing.listed, out)
sys.exit(code)
"""


@pytest.mark.subprocess
def test_the_tiers_partition_the_collected_suite(tmp_path):
    """Collects the whole suite, then selects each tier from it as ``--tier`` does: each test is in exactly one tier,
    and every tier has tests."""
    listed = tmp_path / "tiers.json"
    result = subprocess.run(
        [sys.executable, "-c", LIST_TIERS, str(listed)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    collected = json.loads(listed.read_text())
    everything = set(collected["collected"])
    assert set(collected["tiers"]) == everything
    by_tier = {tier: selected(collected["tiers"], [tier]) for tier in TIERS}
    assert all(by_tier.values()), {tier: len(tests) for tier, tests in by_tier.items()}
    assert partition_problems(everything, by_tier) == []


def test_the_slowest_files_scheduled_first_exist():
    """tests/schedule.py hands these files out first; a renamed or removed one would silently lose its place."""
    from tests.schedule import SLOWEST_FILES

    assert [path for path in SLOWEST_FILES if not (REPO / path).is_file()] == []
    assert len(set(SLOWEST_FILES)) == len(SLOWEST_FILES)
