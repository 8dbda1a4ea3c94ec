"""Celery tasks. The evaluation job's task (``jobs.evaluation.run``, and the same under the name older releases
queued it by) is made by the job engine (studio/engine.py) from the kind declared in evaluation/jobs.py; a worker's
autodiscovery imports this module, which registers it."""

from evaluation import jobs  # noqa: F401
