"""tests/parallel.py: what each test process of a parallel run gets of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parallel import REPO, isolate
from tests.schedule import SLOWEST_FILES, file_order


def test_each_process_gets_its_own_data_folder_and_redis_database():
    first, second = {"REDIS_URL": "redis://127.0.0.1:6379/2"}, {"REDIS_URL": "redis://127.0.0.1:6379/2"}
    isolate("gw0", first)
    isolate("gw3", second)
    assert first == {"REDIS_URL": "redis://127.0.0.1:6379/2", "STUDIO_DATA_DIR": str(REPO / "var" / "xdist-gw0")}
    assert second == {"REDIS_URL": "redis://127.0.0.1:6379/5", "STUDIO_DATA_DIR": str(REPO / "var" / "xdist-gw3")}


def test_a_data_folder_given_is_divided_and_no_redis_is_left_alone(tmp_path: Path):
    environ = {"STUDIO_DATA_DIR": str(tmp_path)}
    isolate("gw1", environ)
    assert environ == {"STUDIO_DATA_DIR": str(tmp_path / "xdist-gw1")}


def test_too_many_processes_for_the_redis_databases_is_refused_by_name():
    with pytest.raises(RuntimeError, match="gw12 would use Redis database 14"):
        isolate("gw12", {"REDIS_URL": "redis://127.0.0.1:6379/2"})
    with pytest.raises(RuntimeError, match="redis://host:port/db"):
        isolate("gw0", {"REDIS_URL": "redis://127.0.0.1:6379/2?timeout=3"})


def test_the_slowest_files_are_queued_first_then_by_their_number_of_tests():
    ids = ["tests/a/test_small.py::t", "tests/a/test_many.py::t1", "tests/a/test_many.py::t2"]
    ids += [f"{SLOWEST_FILES[1]}::t", f"{SLOWEST_FILES[0]}::t"]
    order = file_order(ids)
    queue = sorted(order, key=order.__getitem__)
    assert queue == [SLOWEST_FILES[0], SLOWEST_FILES[1], "tests/a/test_many.py", "tests/a/test_small.py"]
