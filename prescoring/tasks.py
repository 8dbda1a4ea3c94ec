"""Celery tasks. The pre-scoring job's tasks (``jobs.prescore.run``, ``jobs.prescore.shard``, and the same under the
names they had in the traces app, which queued messages carry) are made by the job engine (studio/engine.py) from
the kind declared in prescoring/jobs.py; a worker's autodiscovery imports this module, which registers them."""

from prescoring import jobs  # noqa: F401
