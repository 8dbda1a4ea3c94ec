"""The embedded mode's broker: kombu's filesystem transport, with messages that appear whole and are taken once.

kombu's own filesystem channel creates a message's file under its final name and then writes the payload, and a
consumer takes a message by moving it into the system's temporary folder. A consumer that lists the queue between
the two steps of a producer takes an empty file: the message is lost and the consumer fails on its JSON (measured
on the development machine, two consumers polling while the CPUs were busy: 1 message in 10 lost). In the studio
that is a job that never starts, or an export shard that never runs. And where the temporary folder is on another
filesystem, a move is a copy and a delete, so two consumers could both take one message.

Here a producer writes the payload under a name no consumer reads (``.part-…``) and renames it into the queue when
it is complete; a consumer claims a message by renaming it into a ``claimed`` folder beside the queue, on the same
filesystem, so exactly one consumer wins. A file that still cannot be read as a message is set aside in
``unreadable`` with a log line, and the consumer goes on with the next message."""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

logger = logging.getLogger(__name__)

CLAIMED = "claimed"
UNREADABLE = "unreadable"
PARTIAL_PREFIX = ".part-"
# A claim is read, and a partial file renamed, the instant after it is made: one this old was left by a killed process.
ABANDONED_AFTER_S = 60


def message_filename(queue: str) -> str:
    """kombu's own name for a message of ``queue``, so its ``_size`` and ``_purge`` still count and remove them."""
    return f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"


class Channel(filesystem.Channel):
    @cached_property
    def claimed_folder(self) -> str:
        """Where a consumer moves the message it takes (made once per channel, not at every look at the queue)."""
        folder = os.path.join(self.data_folder_in, CLAIMED)
        os.makedirs(folder, exist_ok=True)
        return folder

    def _folders_make(self) -> None:
        """The queue's folders, made again when something removed them (a data folder tidied by hand, a test): a
        missing folder means an empty queue, never a job that cannot be sent."""
        for folder in {self.data_folder_in, self.data_folder_out}:
            os.makedirs(folder, exist_ok=True)
        self.__dict__.pop("claimed_folder", None)

    def _size(self, queue: str) -> int:
        try:
            return super()._size(queue)
        except FileNotFoundError:
            self._folders_make()
            return 0

    def _purge(self, queue: str) -> int:
        try:
            return super()._purge(queue)
        except FileNotFoundError:
            self._folders_make()
            return 0

    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]  # kombu's filesystem channel's own signature
        if not os.path.isdir(self.data_folder_out):
            self._folders_make()
        final = os.path.join(self.data_folder_out, message_filename(queue))
        partial = os.path.join(self.data_folder_out, f"{PARTIAL_PREFIX}{uuid.uuid4().hex}")
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.rename(partial, final)  # the message appears in the queue complete, or not at all
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str) -> dict[str, Any]:  # type: ignore[override]  # kombu's filesystem channel's own signature
        wanted = f"{queue}.msg"
        try:
            filenames = sorted(os.listdir(self.data_folder_in))
        except FileNotFoundError:
            self._folders_make()
            raise Empty() from None
        for filename in filenames:
            if filename.partition(".")[2] != wanted:
                continue
            mine = os.path.join(self.claimed_folder, filename)
            try:
                os.rename(os.path.join(self.data_folder_in, filename), mine)
                os.utime(mine)  # when it was claimed: queue_sweep gives back only claims older than a while
                with open(mine, "rb") as handle:
                    raw = handle.read()
            except FileNotFoundError:
                continue  # another consumer took it first (or the sweep gave a stale claim back: taken again)
            except OSError as exc:
                self._set_aside(mine, filename, exc)
                continue
            try:
                message = loads(bytes_to_str(raw))
            except ValueError as exc:
                self._set_aside(mine, filename, exc)
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(mine)
            return message
        raise Empty()

    def _set_aside(self, path: str, filename: str, error: Exception) -> None:
        folder = os.path.join(self.data_folder_in, UNREADABLE)
        os.makedirs(folder, exist_ok=True)
        try:
            os.rename(path, os.path.join(folder, filename))
        except OSError:
            pass
        logger.error("broker message %s is not readable (%s): set aside in %s", filename, error, folder)


def queue_sweep(folder: str, *, now: float) -> dict[str, int]:
    """Tidy the queue ``folder`` (``studio.jobs.jobs_sweep_files``, every worker's watchdog; ``now`` a timestamp):
    a message a consumer claimed ABANDONED_AFTER_S ago and still holds was never read (a consumer deletes its claim
    once it has read it: this one was killed in between) and goes back into the queue, to be taken again (jobs and
    shards run at least once, their writes idempotent); a producer's partial file as old was never completed
    (killed while writing; its job is sent again as lost) and is removed."""
    before = now - ABANDONED_AFTER_S
    swept = {"restored": 0, "partial_removed": 0}
    claimed = os.path.join(folder, CLAIMED)
    for directory, prefix, key in ((claimed, "", "restored"), (folder, PARTIAL_PREFIX, "partial_removed")):
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            try:
                if not name.startswith(prefix) or os.stat(path).st_mtime >= before:
                    continue
                if key == "restored":
                    os.rename(path, os.path.join(folder, name))
                else:
                    os.unlink(path)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                continue  # read and deleted meanwhile, or not a message
            swept[key] += 1
    return swept


class Transport(filesystem.Transport):
    Channel = Channel
