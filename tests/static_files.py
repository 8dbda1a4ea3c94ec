"""WhiteNoise for the test processes: the production middleware, with its scan of the static finders made once.

WhiteNoise lists every file the static finders know when its middleware is built (``WHITENOISE_USE_FINDERS``),
and Django's test ``Client`` builds the whole middleware chain anew for each client: about 0.15 s of CPU here, which
was most of what a test request cost (the access-matrix walk makes thousands of clients). The files do not change
during a run, so the scan is kept per configuration that decides it and the found files are served exactly as the
production middleware serves them. tests/settings.py puts this class where ``studio.settings`` names WhiteNoise's."""

from __future__ import annotations

from django.conf import settings
from whitenoise.middleware import WhiteNoiseMiddleware


class WhiteNoiseScannedOnceMiddleware(WhiteNoiseMiddleware):
    _scans: dict[tuple, dict] = {}

    def add_files_from_finders(self) -> None:
        key = (
            self.static_prefix,
            tuple(settings.STATICFILES_FINDERS),
            tuple(str(entry) for entry in settings.STATICFILES_DIRS),
            tuple(settings.INSTALLED_APPS),
            self.max_age,
            self.allow_all_origins,
            self.charset,
        )
        found = self._scans.get(key)
        if found is None:
            before = dict(self.files)
            super().add_files_from_finders()
            found = {url: file for url, file in self.files.items() if before.get(url) is not file}
            self._scans[key] = found
        self.files.update(found)
