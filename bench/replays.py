"""Replay requests at scale, with a runner killed midway (docs/runners.md, "Faults").

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/replay_bench .venv/bin/python bench/replays.py \
        [--requests 1000] [--runners 4] [--lease 2] [--late 10]

Its own database (the script migrates it). It makes ``--requests`` accepted corrections and their replay requests
(``--late`` of them already past the project's deadline), then runs ``--runners`` runner threads through the
services a runner's API calls: claim, push the corrected step, finish (one in twenty ends "failed" with the
runner's words, as a runner whose environment would not restore). One runner dies after its tenth claim, holding a
request it never finishes: its lease runs out and another runner takes the request over. Checked: every request
ends (succeeded, failed with the runner's words, or timed out), no request is held by two live runners at once,
and a request taken over was claimed twice. The requests are rows: nothing here goes through Redis.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

STEP = json.dumps({"thought": "replayed", "action": "click(start_box='(300,400)')"})


def replay_and_finish(request) -> None:
    """What a live runner does with a request it claimed: push the branch's step, then finish it: 1 request in 20
    fails with the runner's words, the others end with the environment's verdict (success for 2 in 3)."""
    from replays.services import replay_branch_push, replay_request_finish

    replay_branch_push(request_id=request.pk, claim=request.claims, index=2, step=STEP)
    if request.pk % 20 == 0:
        replay_request_finish(request_id=request.pk, claim=request.claims, failed=True, message="the VM did not boot")
    else:
        replay_request_finish(request_id=request.pk, claim=request.claims, success=request.pk % 3 != 0, message="done")


class Runners:
    """The runners of the bench, threads of this process, and what they saw: which live runner replays which
    request (``held``), any request two live runners held at once or a finish refused (``violations``), and how
    many requests each finished."""

    def __init__(self, project):
        self.project = project
        self.guard = threading.Lock()
        self.held: dict[int, str] = {}  # request -> the live runner replaying it
        self.violations: list[str] = []
        self.handled: Counter = Counter()

    def hold(self, request_pk: int, name: str) -> None:
        with self.guard:
            if request_pk in self.held:
                self.violations.append(f"{request_pk} claimed by {name} while {self.held[request_pk]} replays it")
            self.held[request_pk] = name

    def run(self, name: str, dies_after: int | None) -> None:
        """Claim and replay until no request is left open; ``dies_after`` claims, the runner is killed: it holds its
        last claim in the database and replays nothing more."""
        from django.db import connection

        from replays.models import REPLAY_ENDED, ReplayRequest
        from replays.services import replay_branch_push, replay_request_claim
        from studio.errors import Conflict

        claims = 0
        try:
            while True:
                request = replay_request_claim(project=self.project, runner=name)
                if request is None:
                    if not ReplayRequest.objects.filter(project=self.project).exclude(status__in=REPLAY_ENDED).exists():
                        return
                    time.sleep(0.1)  # a request held by a dead runner's lease: wait for it to run out
                    continue
                claims += 1
                self.hold(request.pk, name)
                if dies_after is not None and claims > dies_after:
                    replay_branch_push(request_id=request.pk, claim=request.claims, index=2, step=STEP)
                    with self.guard:
                        del self.held[request.pk]
                    return
                try:
                    replay_and_finish(request)
                    self.handled[name] += 1
                except Conflict as exc:
                    self.violations.append(f"{name} lost {request.pk}: {exc}")
                finally:
                    with self.guard:
                        self.held.pop(request.pk, None)
        finally:
            connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--runners", type=int, default=4)
    parser.add_argument("--lease", type=int, default=2, help="the project's lease, seconds")
    parser.add_argument("--late", type=int, default=10, help="requests already past the project's deadline")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-replays-"))
    os.environ.update(
        STUDIO_DATA_DIR=str(scratch / "data"), STUDIO_MODE="dev", DJANGO_SETTINGS_MODULE="studio.settings"
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, check=True, capture_output=True)

    import django

    django.setup()
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Annotation, AnnotationStatus
    from replays.models import ReplayRequest
    from replays.services import (
        replay_policy_set,
        replay_request_create,
    )
    from studio.permissions import Role
    from studio.services import user_create
    from traces.models import Step, Trace
    from traces.services import project_create

    stamp = int(time.time())
    lead = user_create(username=f"replay-lead-{stamp}", password="bench-password-7731", role=Role.LEAD)
    project = project_create(name=f"replay bench {stamp}", members=[lead])
    replay_policy_set(project=project, every_accepted_correction=False, lease_s=args.lease, deadline_s=600)
    made = time.monotonic()
    traces = Trace.objects.bulk_create(
        Trace(project=project, external_id=f"t{n}", instruction="Turn on dark mode", source="native", step_count=2)
        for n in range(args.requests)
    )
    Step.objects.bulk_create(
        Step(trace=trace, index=i, action_text="click(start_box='(100,200)')") for trace in traces for i in (1, 2)
    )
    answers = Annotation.objects.bulk_create(
        Annotation(
            trace=trace,
            project=project,
            annotator=lead,
            status=AnnotationStatus.ACCEPTED,
            verdict="error",
            tau=2,
            corrected_action="click(start_box='(300,400)')",
        )
        for trace in traces
    )
    for answer in answers:
        replay_request_create(annotation=answer, actor=lead, reason="api")
    late = list(ReplayRequest.objects.filter(project=project).order_by("-id").values_list("pk", flat=True)[: args.late])
    ReplayRequest.objects.filter(pk__in=late).update(deadline_at=timezone.now() - timedelta(seconds=1))
    print(f"{args.requests} requests made in {time.monotonic() - made:.1f} s")

    book = Runners(project)
    started = time.monotonic()
    threads = [
        threading.Thread(target=book.run, args=(f"runner-{i}", 10 if i == 0 else None)) for i in range(args.runners)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - started
    statuses = Counter(ReplayRequest.objects.filter(project=project).values_list("status", flat=True))
    taken_over = ReplayRequest.objects.filter(project=project, claims__gt=1).count()
    failed_words = set(ReplayRequest.objects.filter(project=project, status="failed").values_list("message", flat=True))
    print(f"{args.runners} runners (runner-0 killed after 10 claims) ended every request in {took:.1f} s:")
    print(f"  statuses {dict(statuses)}; taken over after a lease ran out: {taken_over}")
    print(f"  finished per runner {dict(book.handled)}; failures said {sorted(failed_words)}")
    print(f"  {args.requests / took:.0f} requests/s; violations: {book.violations or 'none'}")
    return 0 if every_request_ended_once(statuses, book.violations, taken_over, args=args) else 1


def every_request_ended_once(statuses: Counter, violations: list[str], taken_over: int, *, args) -> bool:
    """The bench's verdict: no request held by two live runners, each ended (succeeded, failed with the runner's
    words or timed out: exactly the late ones), and the killed runner's request taken over."""
    return (
        not violations
        and sum(statuses.values()) == args.requests
        and set(statuses) <= {"succeeded", "failed", "timed_out"}
        and statuses["timed_out"] == args.late
        and taken_over >= 1
    )


if __name__ == "__main__":
    sys.exit(main())
