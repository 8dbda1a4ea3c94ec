"""The reference runner (docs/runners.md): claims replay requests of a project, restores the settings app
(demo/settings_env.py) to step τ, executes the corrected action, lets the scripted agent go on, pushes the branch step
by step and finishes with the environment's verdict.

    python -m demo.replay_runner --url http://127.0.0.1:8000 --token TOKEN --project 3 [--name runner-1] [--once]
    python -m demo.replay_runner ... --record failing-1     # push the failing run a replay corrects

The HTTP goes through a ``Transport`` (``post(path, data, files) -> (status, json)``): ``HttpTransport`` for a
studio over the network, a test's Django client in process."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Protocol

from demo.settings_env import (
    CONVENTION,
    ENVIRONMENT,
    START_STATE,
    TASK,
    EnvironmentProblem,
    SettingsEnv,
    failing_run,
    scripted_agent,
)

MAX_STEPS = 10


class Transport(Protocol):
    def post(self, path: str, data: dict, files: dict | None = None) -> tuple[int, Any]: ...


class HttpTransport:
    def __init__(self, url: str, token: str, timeout: float = 30.0):
        import requests

        self.base = url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})
        self.timeout = timeout

    def post(self, path: str, data: dict, files: dict | None = None) -> tuple[int, Any]:
        sent = {k: (name, content) for k, (name, content) in (files or {}).items()}
        response = self.session.post(f"{self.base}{path}", data=data, files=sent or None, timeout=self.timeout)
        return response.status_code, (response.json() if response.content else None)


class RunnerError(Exception):
    pass


def _expect(answer: tuple[int, Any], *ok: int) -> Any:
    status, body = answer
    if status not in ok:
        raise RunnerError(f"HTTP {status}: {(body or {}).get('detail', body) if isinstance(body, dict) else body}")
    return body


def record_failing_run(transport: Transport, project_id: int, external_id: str) -> None:
    """Push the settings app's failing run (docs/rounds.md, step by step) and end it failed."""
    env = SettingsEnv()
    metadata = {"environment": ENVIRONMENT, "env_state": START_STATE}
    for index, (thought, action) in enumerate(failing_run(), start=1):
        fields = {"index": index, "step": json.dumps({"thought": thought, "action": action})}
        if index == 1:
            fields |= {"instruction": TASK, "coordinates": CONVENTION, "metadata": json.dumps(metadata)}
        path = f"/api/projects/{project_id}/traces/{external_id}/steps/"
        _expect(transport.post(path, fields, {"screenshot": ("screen.png", env.screenshot_png())}), 200, 201)
        env.step(action)
    path = f"/api/projects/{project_id}/traces/{external_id}/end/"
    _expect(
        transport.post(path, {"outcome": "failure"}, {"final_screenshot": ("final.png", env.screenshot_png())}), 200
    )


def replay_next(transport: Transport, project_id: int, runner: str, *, agent=scripted_agent) -> dict | None:
    """Claim one request and replay it to its end; its finished request, or None when none waited."""
    claimed = _expect(transport.post(f"/api/projects/{project_id}/replays/claim/", {"runner": runner}), 200, 204)
    if claimed is None:
        return None
    replay = claimed["replay"]
    claim, push = replay["claim"], replay["push"]
    try:
        env = SettingsEnv.restore(replay["trace"]["metadata"], [a["action"] for a in replay["actions_before"]])
        thought, action = replay["corrected"]["thought"], replay["corrected"]["action"]
        index = replay["tau"]
        for _ in range(MAX_STEPS):
            step = json.dumps({"thought": thought, "action": action})
            shot = {"screenshot": ("screen.png", env.screenshot_png())}
            _expect(transport.post(push["steps"], {"claim": claim, "index": index, "step": step}, shot), 200, 201)
            if env.step(action):
                break
            index += 1
            thought, action = agent(env)
        success, score, message = env.verdict()
        fields = {"claim": claim, "success": "true" if success else "false", "score": score, "message": message}
        final = {"final_screenshot": ("final.png", env.screenshot_png())}
        return _expect(transport.post(push["finish"], fields, final), 200)
    except EnvironmentProblem as exc:
        return _expect(transport.post(push["finish"], {"claim": claim, "failed": "true", "message": str(exc)}), 200)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--project", type=int, required=True)
    parser.add_argument("--name", default="reference-runner")
    parser.add_argument("--once", action="store_true", help="Stop when no request waits.")
    parser.add_argument("--poll", type=float, default=2.0, help="Seconds between polls when none waits.")
    parser.add_argument("--record", default="", help="Push the failing run under this external id, then stop.")
    args = parser.parse_args(argv)
    transport = HttpTransport(args.url, args.token)
    if args.record:
        record_failing_run(transport, args.project, args.record)
        print(f"pushed {args.record}")
        return 0
    while True:
        finished = replay_next(transport, args.project, args.name)
        if finished is None:
            if args.once:
                return 0
            time.sleep(args.poll)
            continue
        print(f"replay {finished['id']}: {finished['status']} success={finished['success']} {finished['message']}")


if __name__ == "__main__":
    sys.exit(main())
