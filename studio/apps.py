import logging
from pathlib import Path

from django.apps import AppConfig
from django.conf import settings

log = logging.getLogger(__name__)


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Trace Studio"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in
        from django.core.signals import request_finished

        from studio.i18n import on_sign_in
        from studio.logs import request_context_end
        from studio.permissions import access_gather

        from . import (
            checks,  # noqa: F401  (registers system checks)
            schema,  # noqa: F401  (registers the API schema's extensions)
        )

        # The one access table, from every app's part beside its urls.py (studio.permissions).
        access_gather()
        # A request's log context ends with it (studio.logs): lines logged between requests name none.
        request_finished.connect(request_context_end, dispatch_uid="studio.logs.request_context_end")
        # The account's language becomes the session's at sign-in (studio.i18n).
        user_logged_in.connect(on_sign_in, dispatch_uid="studio.i18n.on_sign_in")

        # Large request bodies spool here (under the data dir, where the sweep looks), so the folder must exist;
        # a process with no writable data dir (collectstatic at image build) needs none.
        try:
            Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("cannot make the upload spool folder %s: %s", settings.FILE_UPLOAD_TEMP_DIR, exc)
