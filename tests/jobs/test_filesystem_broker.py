"""The embedded mode's broker (studio.broker_filesystem): a message is in the queue whole or not at all, and one
consumer takes it. kombu's own filesystem channel lost about one message in ten to a consumer that listed the queue
while a producer was writing (a job that never started: two worker tests timed out on it)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from queue import Empty

import pytest
from django.conf import settings
from kombu import Connection

from studio import broker_filesystem

TRANSPORT = "studio.broker_filesystem:Transport"


def _connection(folder) -> Connection:
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False}
    return Connection("filesystem://", transport=TRANSPORT, transport_options=options)


def _messages(folder) -> list[str]:
    return [name for name in os.listdir(folder) if name.endswith(".msg")]


def test_a_consumer_listing_the_queue_while_a_message_is_written_does_not_take_it(tmp_path, monkeypatch):
    producer, consumer = _connection(tmp_path), _connection(tmp_path)
    seen_while_writing = []

    class Written:
        """The file being written: before its bytes go down, a consumer looks at the queue."""

        def __init__(self, handle):
            self.handle = handle

        def write(self, data):
            try:
                seen_while_writing.append(consumer.default_channel._get("default"))
            except Empty:
                seen_while_writing.append("empty")
            return self.handle.write(data)

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

    def spying_open(path, mode="r", *args, **kwargs):
        handle = open(path, mode, *args, **kwargs)
        return Written(handle) if "w" in mode else handle

    monkeypatch.setattr(broker_filesystem, "open", spying_open, raising=False)
    try:
        producer.default_channel._put("default", {"n": 1})
        assert seen_while_writing == ["empty"]
        assert consumer.default_channel._get("default") == {"n": 1}
        assert not _messages(tmp_path) and not os.listdir(tmp_path / broker_filesystem.CLAIMED)
    finally:
        producer.release()
        consumer.release()


def test_two_consumers_racing_a_producer_take_every_message_exactly_once(tmp_path):
    count = 3000
    taken: list[int] = []
    failures: list[str] = []
    produced = threading.Event()
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between nearly every step: the interleavings a busy machine gives

    def consume():
        with _connection(tmp_path) as connection:
            channel = connection.default_channel
            while True:
                try:
                    taken.append(channel._get("default")["n"])
                except Empty:
                    if produced.is_set() and not _messages(tmp_path):
                        return
                except Exception as error:  # the failure under test: recorded, and the consumer goes on
                    failures.append(repr(error))

    consumers = [threading.Thread(target=consume) for _ in range(2)]
    try:
        for thread in consumers:
            thread.start()
        with _connection(tmp_path) as connection:
            for n in range(count):
                connection.default_channel._put("default", {"n": n})
        produced.set()
        for thread in consumers:
            thread.join(60)
    finally:
        produced.set()
        sys.setswitchinterval(previous)
    assert not failures, failures[:3]
    assert sorted(taken) == list(range(count))


def test_an_unreadable_message_is_set_aside_and_the_next_one_delivered(tmp_path, caplog):
    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        (tmp_path / "1_broken.default.msg").write_bytes(b'{"half": ')
        channel._put("default", {"n": 2})
        assert channel._get("default") == {"n": 2}
        with pytest.raises(Empty):
            channel._get("default")
    assert os.listdir(tmp_path / broker_filesystem.UNREADABLE) == ["1_broken.default.msg"]
    assert "1_broken.default.msg is not readable" in caplog.text


def test_purge_and_size_see_the_studio_channel_messages(tmp_path):
    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        for n in range(3):
            channel._put("default", {"n": n})
        channel._put("gpu", {"n": 9})
        assert channel._size("default") == 3
        assert channel._purge("default") == 3
        assert channel._get("gpu") == {"n": 9}


def test_a_removed_queue_folder_is_an_empty_queue_made_again_not_a_failed_send(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    with _connection(folder) as connection:
        channel = connection.default_channel
        channel._put("default", {"n": 1})
        shutil.rmtree(folder)
        assert channel._size("default") == 0 and folder.is_dir()
        shutil.rmtree(folder)
        with pytest.raises(Empty):
            channel._get("default")
        shutil.rmtree(folder)
        assert channel._purge("default") == 0
        shutil.rmtree(folder)
        channel._put("default", {"n": 2})
        assert channel._get("default") == {"n": 2}


@pytest.mark.skipif(bool(os.environ.get("REDIS_URL")), reason="the run's broker is Redis, not the filesystem")
def test_the_embedded_mode_uses_the_studio_channel():
    from studio.celery import app

    assert settings.CELERY_BROKER_URL == "filesystem://"
    with app.connection_for_write() as connection:
        assert isinstance(connection.default_channel, broker_filesystem.Channel)


def test_the_sweep_gives_back_a_claim_a_killed_consumer_held_and_removes_a_killed_producers_file(tmp_path):
    """A consumer killed between claiming a message and reading it, a producer killed while writing one: the
    watchdog's sweep puts the message back in the queue (it is then delivered) and removes the partial file; a
    claim or a partial file younger than ABANDONED_AFTER_S (a live process's) is left alone."""
    import time

    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        channel._put("default", {"n": 1})
        channel._put("default", {"n": 2})
        claimed = tmp_path / broker_filesystem.CLAIMED
        for name in sorted(_messages(tmp_path)):
            claimed.mkdir(exist_ok=True)
            os.rename(tmp_path / name, claimed / name)  # claimed by consumers that are then killed
        old, young = sorted(claimed.iterdir())  # which message is which: two put in one millisecond sort by uuid
        abandoned = json.loads(old.read_bytes())
        (tmp_path / f"{broker_filesystem.PARTIAL_PREFIX}killed").write_bytes(b'{"half": ')
        (tmp_path / f"{broker_filesystem.PARTIAL_PREFIX}writing").write_bytes(b'{"half": ')
        now = time.time()
        stale = now - broker_filesystem.ABANDONED_AFTER_S - 1
        for path in (old, tmp_path / f"{broker_filesystem.PARTIAL_PREFIX}killed"):
            os.utime(path, (stale, stale))
        with pytest.raises(Empty):
            channel._get("default")
        assert broker_filesystem.queue_sweep(str(tmp_path), now=now) == {"restored": 1, "partial_removed": 1}
        assert channel._get("default") == abandoned
        with pytest.raises(Empty):
            channel._get("default")
        assert [path.name for path in claimed.iterdir()] == [young.name]
        assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".part-")) == [
            f"{broker_filesystem.PARTIAL_PREFIX}writing"
        ]


def test_a_claim_is_dated_when_it_is_made_so_an_old_message_just_taken_is_not_given_back(tmp_path, monkeypatch):
    import time

    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        channel._put("default", {"n": 1})
        (name,) = _messages(tmp_path)
        written_long_ago = time.time() - 3600
        os.utime(tmp_path / name, (written_long_ago, written_long_ago))  # queued an hour before a worker came
        real_open = open
        seen = {}

        def watching_open(path, *args, **kwargs):  # the instant between the claim and its read
            if str(path).endswith(name):
                seen["claim_age_s"] = time.time() - os.stat(path).st_mtime
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(broker_filesystem, "open", watching_open, raising=False)
        assert channel._get("default") == {"n": 1}
        assert seen["claim_age_s"] < broker_filesystem.ABANDONED_AFTER_S
