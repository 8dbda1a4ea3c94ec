"""The suite's three tiers, decided here and nowhere else, from each test's markers (pyproject's list):

- ``test`` (``make test``, the README's command): unit, service, API and the page's node tests; no browser, no
  worker or server process, no full stack. A few minutes on 2 cores.
- ``integration`` (``make test-integration``): Chromium (``browser``), real Celery workers (``worker``), tests
  that start servers or other long child processes (``subprocess``), TRL's trainers in the test process
  (``training``: torch and TRL, a training step and the full-HD collation, most of a minute of CPU on 2 cores) and
  ``torch.compile`` runs (``compiler``: inductor compiles C++ in child processes, minutes of CPU when its cache is
  cold, as in a fresh CI machine), and any other test of many seconds on its own (``heavy``: the tiny
  Qwen2-VL's decoding, the public real traces at full size, a database migrated back and forth, the API fuzzed
  for every role, a stalled server waited out), so that ``make test`` stays within its 4 minutes.
- ``release`` (``make test-release``): the production stack as child processes (``fullstack``, outages included)
  and LLaMA-Factory's own preprocessing and training (``llamafactory``).

A test with markers of two tiers runs in the later one. ``pytest --tier NAME`` keeps one tier's tests (the others are
reported as deselected), ``--tier`` given twice keeps both tiers'; without ``--tier`` every test runs, so
``pytest tests/<area>/test_x.py`` runs a whole file. Loaded with ``-p tests.tiers`` (pyproject's addopts).
``.ci/run`` runs ``make test``, then the integration and release tiers in one run
(``make test-integration-and-release``): one start of the test processes and their browsers instead of two, and no
process left idle at the end of the first while the other finishes its last long file."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

TIERS = ("test", "integration", "release")
TIER_MARKERS = {
    "integration": frozenset({"browser", "worker", "subprocess", "training", "compiler", "heavy"}),
    "release": frozenset({"fullstack", "llamafactory"}),
}
COLLECTED_TIERS = pytest.StashKey[dict[str, str]]()


def tier_of(marker_names: Iterable[str]) -> str:
    """The tier a test with these markers runs in: the latest tier any of its markers names, else ``test``."""
    names = set(marker_names)
    for tier in reversed(TIERS):
        if names & TIER_MARKERS.get(tier, frozenset()):
            return tier
    return "test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=TIERS,
        action="append",
        default=None,
        help="run one tier of the suite (tests/tiers.py): test, integration or release, given again for another; "
        "every test without it",
    )


def selected(tiers: dict[str, str], wanted: Iterable[str] | None) -> set[str]:
    """The tests ``--tier`` keeps of those collected (``tiers``: each test's id and its tier) for the tiers it named
    (``wanted``); all without it."""
    kept = None if wanted is None else set(wanted)
    return {test for test, tier in tiers.items() if kept is None or tier in kept}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers = {item.nodeid: tier_of(mark.name for mark in item.iter_markers()) for item in items}
    config.stash[COLLECTED_TIERS] = tiers
    wanted = config.getoption("tier")
    if wanted is None:
        return
    keep = selected(tiers, wanted)
    kept = [item for item in items if item.nodeid in keep]
    left = [item for item in items if item.nodeid not in keep]
    if left:
        config.hook.pytest_deselected(items=left)
    items[:] = kept
