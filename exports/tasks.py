"""Celery tasks. The export job's tasks (``jobs.export.run``, ``jobs.export.shard``, and the same under the names
older releases queued them by) are made by the job engine (studio/engine.py) from the kind declared in
exports/jobs.py; a worker's autodiscovery imports this module, which registers them."""

from exports import jobs  # noqa: F401
