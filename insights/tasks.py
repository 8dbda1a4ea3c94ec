"""Celery tasks. The clustering job's task (``jobs.clustering.run``, and ``insights.tasks.run_clustering``, the name
older releases queued it by) is made by the job engine (studio/engine.py) from the kind declared in insights/jobs.py;
a worker's autodiscovery imports this module, which registers it."""

from insights import jobs  # noqa: F401
