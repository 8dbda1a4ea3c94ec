"""The settings every test process runs with: the studio's own (``studio.settings``, read from the same environment
variables), with one fast password hasher put first.

Django hashes every new password with the first hasher of ``PASSWORD_HASHERS`` (the production one costs tens of
milliseconds of CPU a hash, and the suite makes well over a thousand users) and checks a stored hash with the hasher its
prefix names, as long as that hasher is listed. The production hashers stay listed after the fast one, so a hash made
the production way still checks here. Only the tests name this module: pyproject's pytest settings, and the child
processes the tests start (a Celery worker, uvicorn, runstudio, ``manage.py``) inherit ``DJANGO_SETTINGS_MODULE`` from
the test process, so they check the hashes the test wrote. ``studio.settings`` itself never lists the fast hasher.

On PostgreSQL the database backend is the studio's with the flush between transactional tests made of ``DELETE``s
instead of one ``TRUNCATE`` (tests/postgresql/base.py: seconds a test on two cores).

The static files' middleware is the production WhiteNoise with its scan of the finders made once per test process
(tests/static_files.py): a test client builds its middleware anew, and the scan was most of a test request's cost.
"""

import os

from django.conf import global_settings

import studio.settings as production_settings
from studio.settings import *  # noqa: F403  (every production setting, unchanged)

PRODUCTION_PASSWORD_HASHERS = list(getattr(production_settings, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS))
FAST_TEST_PASSWORD_HASHER = "django.contrib.auth.hashers.MD5PasswordHasher"
PASSWORD_HASHERS = [FAST_TEST_PASSWORD_HASHER, *PRODUCTION_PASSWORD_HASHERS]

if DATABASES["default"]["ENGINE"] == "studio.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.postgresql"  # noqa: F405

PRODUCTION_STATIC_MIDDLEWARE = "whitenoise.middleware.WhiteNoiseMiddleware"
MIDDLEWARE = [
    "tests.static_files.WhiteNoiseScannedOnceMiddleware" if entry == PRODUCTION_STATIC_MIDDLEWARE else entry
    for entry in production_settings.MIDDLEWARE
]

# A test process starts with its metrics folder empty (the children it starts inherit the mark and keep it): the files
# of earlier runs' processes stayed there, and every /metrics a test asks for would read them all.
_METRICS_CLEARED_MARK = "STUDIO_TEST_METRICS_FOLDER_CLEARED"
if os.environ.get(_METRICS_CLEARED_MARK) != str(METRICS_DIR):  # noqa: F405
    for _file in METRICS_DIR.glob("*.db"):  # noqa: F405
        _file.unlink(missing_ok=True)
    os.environ[_METRICS_CLEARED_MARK] = str(METRICS_DIR)  # noqa: F405
