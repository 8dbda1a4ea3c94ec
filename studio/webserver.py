"""The one uvicorn command line for the studio's web server (runstudio, the benchmarks, the tests; the compose
file and the Dockerfile spell out the same flags)."""

from __future__ import annotations

import sys

from django.conf import settings


def uvicorn_command(host: str, port: int | str, *, workers: int = 1, log_level: str = "warning") -> list[str]:
    """``--no-proxy-headers``: uvicorn would otherwise take X-Forwarded-For from any peer on 127.0.0.1, so a
    same-host client could name any address it likes; the ASGI entry (ClientAddressMiddleware) decides instead,
    trusting only STUDIO_TRUSTED_PROXIES. ``--timeout-keep-alive``: an idle kept-alive connection is closed after
    that many seconds."""
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "studio.asgi:application",
        "--host",
        host,
        "--port",
        str(port),
        "--no-proxy-headers",
        "--timeout-keep-alive",
        str(settings.WEB_KEEP_ALIVE_S),
        "--log-level",
        log_level,
    ]
    if workers > 1:
        command += ["--workers", str(workers)]
    return command
