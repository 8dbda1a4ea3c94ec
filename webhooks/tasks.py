"""Deliveries' tasks (``jobs.delivery.run``, and ``webhooks.tasks.deliver_webhook``, the name older releases queued
them by) are made by the job engine (studio/engine.py) from the kind declared in webhooks/jobs.py; importing it here
registers them in a worker. They run on the ``webhooks`` queue (a worker of their own on the full stack; runstudio's
one worker holds them to at most ``WEBHOOKS_DELIVERIES_PER_PROCESS`` of its threads, ``services.PROCESS_SLOTS``): a
slow receiver never holds an import's process or thread."""

from webhooks import jobs  # noqa: F401  (the delivery kind's tasks)
