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

    from django.db import connection
    from django.utils import timezone

    from annotation.models import Annotation, AnnotationStatus
    from replays.models import REPLAY_ENDED, ReplayRequest
    from replays.services import (
        replay_branch_push,
        replay_policy_set,
        replay_request_claim,
        replay_request_create,
        replay_request_finish,
    )
    from studio.errors import Conflict
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

    guard = threading.Lock()
    held: dict[int, str] = {}  # request -> the live runner replaying it
    violations: list[str] = []
    handled: Counter = Counter()

    def runner(name: str, dies_after: int | None) -> None:
        claims = 0
        try:
            while True:
                request = replay_request_claim(project=project, runner=name)
                if request is None:
                    if not ReplayRequest.objects.filter(project=project).exclude(status__in=REPLAY_ENDED).exists():
                        return
                    time.sleep(0.1)  # a request held by a dead runner's lease: wait for it to run out
                    continue
                claims += 1
                with guard:
                    if request.pk in held:
                        violations.append(f"{request.pk} claimed by {name} while {held[request.pk]} replays it")
                    held[request.pk] = name
                if dies_after is not None and claims > dies_after:
                    replay_branch_push(request_id=request.pk, claim=request.claims, index=2, step=STEP)
                    with guard:
                        del held[request.pk]  # killed: it holds the claim in the database, replays nothing
                    return
                try:
                    replay_branch_push(request_id=request.pk, claim=request.claims, index=2, step=STEP)
                    if request.pk % 20 == 0:
                        replay_request_finish(
                            request_id=request.pk, claim=request.claims, failed=True, message="the VM did not boot"
                        )
                    else:
                        replay_request_finish(
                            request_id=request.pk, claim=request.claims, success=request.pk % 3 != 0, message="done"
                        )
                    handled[name] += 1
                except Conflict as exc:
                    violations.append(f"{name} lost {request.pk}: {exc}")
                finally:
                    with guard:
                        held.pop(request.pk, None)
        finally:
            connection.close()

    started = time.monotonic()
    threads = [
        threading.Thread(target=runner, args=(f"runner-{i}", 10 if i == 0 else None)) for i in range(args.runners)
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
    print(f"  finished per runner {dict(handled)}; failures said {sorted(failed_words)}")
    print(f"  {args.requests / took:.0f} requests/s; violations: {violations or 'none'}")
    ok = (
        not violations
        and sum(statuses.values()) == args.requests
        and set(statuses) <= {"succeeded", "failed", "timed_out"}
        and statuses["timed_out"] == args.late
        and taken_over >= 1
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
