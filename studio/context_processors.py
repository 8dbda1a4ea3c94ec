from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from django.conf import settings

from studio.selectors import shortcut_mode_of

if TYPE_CHECKING:
    from django.http import HttpRequest


def studio(request: HttpRequest) -> dict:
    return {
        "studio_mode": settings.STUDIO_MODE,
        "app_version": settings.APP_VERSION,
        # How the person takes single-key shortcuts (static/js/keys.js reads it off <body>); read when a page asks.
        "shortcut_mode": functools.cache(functools.partial(shortcut_mode_of, request.user)),
    }
