"""Celery tasks. The alternatives job's task (``jobs.alternatives.run``, and the same under the name older releases
queued it by) is made by the job engine (studio/engine.py) from the kind declared in annotation/jobs.py; a worker's
autodiscovery imports this module, which registers it."""

from annotation import jobs  # noqa: F401
