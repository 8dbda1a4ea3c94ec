"""A replay runner's loop (docs/runners.md), the one `trace-studio runner` runs: claim a replay request of a project,
restore the environment to step τ, execute the corrected action, let the agent go on, push the branch step by step
and finish with the environment's verdict.

The environment is a module (or any object) with two callables, the part a team writes for OSWorld or AndroidWorld:

* ``restore(metadata, actions)``: the environment as a trace's metadata (as imported) started it, after the recorded
  ``actions`` 1..τ−1; it offers ``screenshot_png()`` (the screen the next action acts on), ``step(action)`` (True
  when the action ended the episode) and ``verdict()`` (``success``, ``score`` and the evaluator's message);
* ``agent(env)``: the agent's next (thought, action) on ``env``'s screen.

Either raises ``EnvironmentProblem`` when it cannot go on (a metadata it cannot restore, an action it does not know):
the request ends "failed" with those words. The reference environment is ``demo/settings_env.py``.

The HTTP goes through a ``Transport`` (``post(path, data, files) -> (status, json)``): ``HttpTransport`` for a
studio over the network, a test's Django client in process."""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from trace_studio_cli.client import StudioClient

MAX_STEPS = 10  # the agent's steps after the corrected one, at most: a runaway agent ends its replay
DEFAULT_ENVIRONMENT = "demo.settings_env"


class EnvironmentProblem(Exception):
    """The environment cannot do what it is asked (an action it does not know, a metadata it cannot restore)."""


class RunnerError(Exception):
    """The studio refused a call the runner cannot go on from; the message is the studio's own."""


class Transport(Protocol):
    def post(self, path: str, data: dict, files: dict | None = None) -> tuple[int, Any]: ...


class HttpTransport:
    """The runner's calls to a studio over HTTP, with the command line's session (token, retries)."""

    def __init__(self, client: StudioClient):
        self.client = client

    def post(self, path: str, data: dict, files: dict | None = None) -> tuple[int, Any]:
        sent = {k: (name, content) for k, (name, content) in (files or {}).items()}
        response = self.client.session.post(
            self.client._url(path), data=data, files=sent or None, timeout=self.client.timeout
        )
        return response.status_code, (response.json() if response.content else None)


def expect(answer: tuple[int, Any], *ok: int) -> Any:
    """The answer's body when its status is one of ``ok``; RunnerError with the studio's words otherwise."""
    status, body = answer
    if status not in ok:
        raise RunnerError(f"HTTP {status}: {(body or {}).get('detail', body) if isinstance(body, dict) else body}")
    return body


def push_run(
    transport: Transport,
    project_id: int,
    external_id: str,
    env,
    steps: Iterable[tuple[str, str]],
    *,
    first: dict,
    outcome: str,
) -> None:
    """Push a run of ``env`` as a trace (the step push, docs/rounds.md): each (thought, action) of ``steps`` with the
    screen it acted on, ``first``'s fields (instruction, coordinates, metadata) with step 1, then its end."""
    for index, (thought, action) in enumerate(steps, start=1):
        fields = {"index": index, "step": json.dumps({"thought": thought, "action": action})}
        if index == 1:
            fields |= first
        path = f"/api/projects/{project_id}/traces/{external_id}/steps/"
        expect(transport.post(path, fields, {"screenshot": ("screen.png", env.screenshot_png())}), 200, 201)
        env.step(action)
    path = f"/api/projects/{project_id}/traces/{external_id}/end/"
    final = {"final_screenshot": ("final.png", env.screenshot_png())}
    expect(transport.post(path, {"outcome": outcome}, final), 200)


def replay_next(transport: Transport, project_id: int, runner: str, environment) -> dict | None:
    """Claim one request and replay it in ``environment`` to its end; the finished request, or None when none
    waited."""
    claimed = expect(transport.post(f"/api/projects/{project_id}/replays/claim/", {"runner": runner}), 200, 204)
    if claimed is None:
        return None
    replay = claimed["replay"]
    claim, push = replay["claim"], replay["push"]
    try:
        env = environment.restore(replay["trace"]["metadata"], [a["action"] for a in replay["actions_before"]])
        thought, action = replay["corrected"]["thought"], replay["corrected"]["action"]
        index = replay["tau"]
        for _ in range(MAX_STEPS):
            step = json.dumps({"thought": thought, "action": action})
            shot = {"screenshot": ("screen.png", env.screenshot_png())}
            expect(transport.post(push["steps"], {"claim": claim, "index": index, "step": step}, shot), 200, 201)
            if env.step(action):
                break
            index += 1
            thought, action = environment.agent(env)
        success, score, message = env.verdict()
        fields = {"claim": claim, "success": "true" if success else "false", "score": score, "message": message}
        final = {"final_screenshot": ("final.png", env.screenshot_png())}
        return expect(transport.post(push["finish"], fields, final), 200)
    except EnvironmentProblem as exc:
        return expect(transport.post(push["finish"], {"claim": claim, "failed": "true", "message": str(exc)}), 200)


def run(
    transport: Transport,
    project_id: int,
    runner: str,
    environment,
    *,
    once: bool = False,
    poll: float = 2.0,
    said: Callable[[str], None] = print,
) -> int:
    """Replay requests one after another; with ``once``, stop when none waits (how many were replayed), else poll
    every ``poll`` seconds for ever."""
    replayed = 0
    while True:
        finished = replay_next(transport, project_id, runner, environment)
        if finished is None:
            if once:
                return replayed
            time.sleep(poll)
            continue
        replayed += 1
        said(f"replay {finished['id']}: {finished['status']} success={finished['success']} {finished['message']}")


def environment_load(name: str):
    """The environment module ``name`` (importable: on the path, or in the current folder), checked to offer
    ``restore`` and ``agent``."""
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # the console script's path holds its own folder, not the one it runs in
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise RunnerError(
            f"environment {name!r} cannot be imported ({exc}); {DEFAULT_ENVIRONMENT} is in a checkout of the studio"
        ) from None
    missing = [part for part in ("restore", "agent") if not callable(getattr(module, part, None))]
    if missing:
        raise RunnerError(f"environment {name!r} lacks {' and '.join(missing)} (docs/runners.md, 'The environment')")
    return module
