"""Settings for every mode, read from environment variables.

Modes (STUDIO_MODE): ``demo`` (make demo: SQLite, local files, filesystem broker, demo users),
``dev`` (the default for tests and local work) and ``production`` (explicit checks below refuse
insecure or demo configuration). The full stack is selected by DATABASE_URL / REDIS_URL /
STUDIO_STORAGE=s3, not by a separate settings module, so there is one place to read.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, overload

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from studio.oidc_config import oidc_config

BASE_DIR = Path(__file__).resolve().parent.parent
APP_VERSION = "0.1.0"


@overload
def env(name: str, default: str) -> str: ...
@overload
def env(name: str, default: None = None) -> str | None: ...
def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = env(name)
    return default if value is None else int(value)


STUDIO_MODE = env("STUDIO_MODE", "dev")
if STUDIO_MODE not in {"demo", "dev", "production"}:
    raise ImproperlyConfigured(f"STUDIO_MODE must be demo, dev or production, not {STUDIO_MODE!r}")
PRODUCTION = STUDIO_MODE == "production"

# Marks the key as unusable in production: the check below refuses any key with this prefix.
INSECURE_KEY_PREFIX = "insecure-"
SECRET_KEY = env("STUDIO_SECRET_KEY", None if PRODUCTION else INSECURE_KEY_PREFIX + "dev-key-not-for-production")
DEBUG = env_bool("STUDIO_DEBUG", STUDIO_MODE == "dev")
ALLOWED_HOSTS = [h.strip() for h in env("STUDIO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")]
CSRF_TRUSTED_ORIGINS = [o for o in env("STUDIO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# Demo users' password: only ever set in demo mode (the Makefile's demo target sets it).
DEMO_PASSWORD = env("STUDIO_DEMO_PASSWORD")

DATA_DIR = Path(env("STUDIO_DATA_DIR", str(BASE_DIR / "var")))
REALTRACES_DIR = Path(env("STUDIO_REALTRACES_DIR", str(BASE_DIR.parent / "shared" / "realtraces")))

# No "daphne" app: it only makes `runserver` an ASGI server, and it installs Twisted's reactor in every process that
# loads the apps (about 40 MB each: the web server, the worker and its children, runstudio); uvicorn serves instead.
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "studio.staticfiles.StudioStaticFilesConfig",  # django.contrib.staticfiles without static/js/package.json
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "studio",
    "traces",
    "prescoring",
    "annotation",
    "exports",
    "evaluation",
    "webhooks",
    "insights",
    "replays",
]

MIDDLEWARE = [
    # First: the request's id, its log line and metrics (studio.observability); then the operator's endpoints, which
    # skip the rest (the healthchecks come by the server's own address and plain HTTP).
    "studio.observability.RequestObservationMiddleware",
    "studio.observability.OpsEndpointsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "studio.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The request's language: the account's choice kept in the session, else Accept-Language (studio.i18n).
    "studio.i18n.AccountLocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "studio.middleware.InputRulesMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "studio.sessions.AuthenticationMiddleware",  # the user comes in the session's read
    "studio.security.PageActionMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "studio.middleware.DependencyOutageMiddleware",
    "studio.middleware.StudioErrorMiddleware",
]

ROOT_URLCONF = "studio.urls"
ASGI_APPLICATION = "studio.asgi.application"
# Threads per web process that run HTTP requests (studio/asgi.py); each holds at most one database connection.
WEB_THREADS = env_int("STUDIO_WEB_THREADS", 8)
# Threads per web process that run login POSTs (studio/web_entry.py PASSWORD_ROUTES), apart from WEB_THREADS: each
# password check is made costly on purpose (studio/hashers.py), so a burst of logins waits here instead of starving
# the saves.
WEB_PASSWORD_THREADS = env_int("STUDIO_WEB_PASSWORD_THREADS", max(1, (os.cpu_count() or 2) // 2))
WSGI_APPLICATION = None
# Addresses (or networks, CIDR) of the reverse proxies whose X-Forwarded-For / -Proto / -Host headers count
# (studio.middleware.ClientAddressMiddleware); from any other peer those headers are dropped. Empty: none.
# Seconds an idle kept-alive HTTP connection stays open (uvicorn --timeout-keep-alive, studio.webserver).
WEB_KEEP_ALIVE_S = env_int("STUDIO_WEB_KEEP_ALIVE_S", 5)
TRUSTED_PROXIES = [p.strip() for p in env("STUDIO_TRUSTED_PROXIES", "").split(",") if p.strip()]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "frontend_templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "studio.context_processors.studio",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# Sessions live in the database in every mode: a Redis outage must not log everyone out or answer 500, and a
# logout made while Redis was down must not come back to life from a cached copy when it returns. The read is a
# primary-key lookup per request, its SQL compiled once (studio.sessions).
SESSION_ENGINE = "studio.sessions"
AUTHENTICATION_BACKENDS = ["studio.auth_backend.ModelBackend"]  # Django's, with the user's read compiled once
DATABASE_URL = env("DATABASE_URL")
SQLITE_BUSY_TIMEOUT_S = 30
if DATABASE_URL:
    # No persistent per-thread connections: every request returns its connection to the process's pool,
    # which the web threads, Celery's threads and Channels' consumers share.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["ENGINE"] = "studio.postgresql"  # Django's, with a cheaper pool check (below)
    if DATABASES["default"]["ENGINE"].endswith("postgresql") and env_bool("STUDIO_DB_POOL", True):
        # A per-process psycopg pool: connections are reused across requests without leaking per thread.
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": env_int("STUDIO_DB_POOL_SIZE", 20),
            "timeout": 10,
        }
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # psycopg prepares a statement on a connection after this many runs there (0: never). Only the statements
        # run with server-side binding can be prepared: the compiled one-row reads and writes (studio.db).
        DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
            env_int("STUDIO_DB_PREPARE_THRESHOLD", 5) or None
        )
    # A connection PostgreSQL dropped (restart, pg_terminate_backend) is found out before it is handed to a
    # request, not by the request failing: with the pool, the pool checks it (studio.postgresql: a sound connection
    # without a round trip).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env("STUDIO_SQLITE_PATH", str(DATA_DIR / "studio.sqlite3")),
            "OPTIONS": {
                # IMMEDIATE takes the write lock at BEGIN, so a writer waits on the busy timeout
                # instead of failing on a read-to-write lock upgrade (Label Studio's lost saves).
                "transaction_mode": "IMMEDIATE",
                "timeout": SQLITE_BUSY_TIMEOUT_S,
                "init_command": (
                    "PRAGMA journal_mode=WAL;"
                    "PRAGMA synchronous=NORMAL;"
                    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000};"
                ),
            },
            # Each request thread keeps its connection between requests instead of opening one (and running the
            # three PRAGMAs) per request: a tenth of an autosave's CPU. Safe in WAL mode: an idle connection holds
            # no lock and no snapshot, and Django still closes a connection after an error or once this old.
            "CONN_MAX_AGE": env_int("STUDIO_SQLITE_CONN_MAX_AGE_S", 600),
            "TEST": {"NAME": env("STUDIO_SQLITE_TEST_PATH", str(DATA_DIR / "test-studio.sqlite3"))},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Broker, channels -----------------------------------------------------------------------
REDIS_URL = env("REDIS_URL")
BROKER_DIR = DATA_DIR / "broker"
if REDIS_URL:
    from studio.channel_layer import redis_layer_host

    CELERY_BROKER_URL = REDIS_URL
    # kombu's Redis transport, except that a channel of a connection collected after Redis went away answers a
    # connection error instead of an AttributeError that ended a busy worker (studio/broker_redis.py).
    CELERY_BROKER_TRANSPORT = "studio.broker_redis:Transport"
    # Unacked (late-ack) tasks of a killed worker come back after this many seconds.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        "visibility_timeout": env_int("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", 3600)
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_layer_host(REDIS_URL)]},
        }
    }
    # The shared cache is only a cache: short timeouts, so a Redis that hangs costs a request a second, not a
    # thread for ever. Sessions do not live in it (below).
    CACHES = {
        "default": {
            "BACKEND": "studio.cache.SharedPoolRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "studio",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    # Embedded mode: kombu's filesystem transport, a real broker in files that a separate
    # worker process consumes, so nothing runs inline in the web process. Its channel is
    # studio.broker_filesystem's: kombu's own loses a message a consumer lists while it is written.
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "studio.broker_filesystem:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    # A job's tasks go to the queue its kind names (studio/engine.py, JobKind.queue); these route a message sent by
    # a job's older task name (an older release's web process during an upgrade) where its kind would send it.
    "traces.tasks.prescore_with_model": {"queue": "gpu"},
    "evaluation.tasks.run_evaluation": {"queue": "gpu"},
    "annotation.tasks.sample_alternatives": {"queue": "gpu"},
    # Deliveries wait on receivers the studio does not run: on a queue and workers of their own, a slow receiver
    # never holds a process an import or export needs (docs/deploy.md, "Queues").
    "webhooks.tasks.deliver_webhook": {"queue": "webhooks"},
}
# A task whose worker dies mid-run is redelivered, so every task is written to be idempotent.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_ALWAYS_EAGER = env_bool("STUDIO_CELERY_EAGER", False)

# --- Files ----------------------------------------------------------------------------------
STUDIO_STORAGE = env("STUDIO_STORAGE", "local")
MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
# Where `collectstatic` writes (with its manifest, in production); the Dockerfile and docs/deploy.md use the default.
STATIC_ROOT = Path(env("STUDIO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True
if not PRODUCTION:
    STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise serves from the finders in dev; it only wants the folder
# S3 calls are bounded (studio/s3.py): a hung or refusing S3 costs a request seconds, then a 503.
S3_CONNECT_TIMEOUT_S = float(env("STUDIO_S3_CONNECT_TIMEOUT_S", "2"))
S3_READ_TIMEOUT_S = float(env("STUDIO_S3_READ_TIMEOUT_S", "10"))
S3_MAX_ATTEMPTS = env_int("STUDIO_S3_MAX_ATTEMPTS", 3)
# Where browsers reach S3 (presigned downloads and screenshots); defaults to the endpoint the servers use.
S3_PUBLIC_ENDPOINT_URL = env("STUDIO_S3_PUBLIC_ENDPOINT_URL")
# A bundle's presigned download URL is asked for with an API token or a session; it cannot be withdrawn once given,
# so it lives this long only: a revoked token's URL stops working within a minute. S3 checks the signature when a
# download starts, so a long download is not cut off.
S3_BUNDLE_URL_EXPIRY_S = env_int("STUDIO_S3_BUNDLE_URL_EXPIRY_S", 60)
if STUDIO_STORAGE == "s3":
    AWS_STORAGE_BUCKET_NAME = env("STUDIO_S3_BUCKET", "trace-studio")
    AWS_S3_ENDPOINT_URL = env("STUDIO_S3_ENDPOINT_URL")
    AWS_S3_REGION_NAME = env("STUDIO_S3_REGION", "us-east-1")
    AWS_ACCESS_KEY_ID = env("STUDIO_S3_ACCESS_KEY_ID")
    AWS_SECRET_ACCESS_KEY = env("STUDIO_S3_SECRET_ACCESS_KEY")
    AWS_QUERYSTRING_EXPIRE = env_int("STUDIO_S3_URL_EXPIRY_S", 900)
    AWS_DEFAULT_ACL = None
    AWS_S3_FILE_OVERWRITE = False
    AWS_S3_ADDRESSING_STYLE = "path"
    AWS_S3_SIGNATURE_VERSION = "s3v4"  # presigned download URLs that MinIO and AWS both accept
    DEFAULT_STORAGE_BACKEND: dict[str, Any] = {"BACKEND": "studio.s3.StudioS3Storage"}
elif STUDIO_STORAGE == "local":
    DEFAULT_STORAGE_BACKEND = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT)},
    }
else:
    raise ImproperlyConfigured(f"STUDIO_STORAGE must be local or s3, not {STUDIO_STORAGE!r}")
STORAGES = {
    "default": DEFAULT_STORAGE_BACKEND,
    "staticfiles": {
        "BACKEND": "studio.staticfiles.StudioStaticFilesStorage"  # hashed names, also in JS module imports
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# --- Limits on what users may send -----------------------------------------------------------
IMPORT_MAX_UPLOAD_BYTES = env_int("STUDIO_IMPORT_MAX_UPLOAD_BYTES", 2 * 1024**3)
IMPORT_MAX_UNPACKED_BYTES = env_int("STUDIO_IMPORT_MAX_UNPACKED_BYTES", 8 * 1024**3)
IMPORT_MAX_ARCHIVE_ENTRIES = env_int("STUDIO_IMPORT_MAX_ARCHIVE_ENTRIES", 200_000)
IMPORT_MAX_COMPRESSION_RATIO = env_int("STUDIO_IMPORT_MAX_COMPRESSION_RATIO", 200)
IMPORT_MAX_IMAGE_PIXELS = env_int("STUDIO_IMPORT_MAX_IMAGE_PIXELS", 40_000_000)
IMPORT_MAX_JSON_BYTES = env_int("STUDIO_IMPORT_MAX_JSON_BYTES", 256 * 1024**2)
IMPORT_WRITE_THREADS = env_int("STUDIO_IMPORT_WRITE_THREADS", 4)  # parallel screenshot writes per import
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024**2
# studio.web_entry: a request body must arrive within REQUEST_BODY_DEADLINE_S plus a second per
# REQUEST_BODY_MIN_RATE bytes (else 408); a client that takes none of a response for RESPONSE_SEND_TIMEOUT_S
# is disconnected.
REQUEST_BODY_DEADLINE_S = env_int("STUDIO_REQUEST_BODY_DEADLINE_S", 20)
REQUEST_BODY_MIN_RATE = env_int("STUDIO_REQUEST_BODY_MIN_BYTES_PER_S", 32 * 1024)
RESPONSE_SEND_TIMEOUT_S = env_int("STUDIO_RESPONSE_SEND_TIMEOUT_S", 60)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024**2

# --- Disk: scratch space and what is kept (docs/deploy.md, "Disk") --------------------------------
# Each job attempt works in its own folder under JOB_WORK_DIR (unpacked archives, export builds), removed when the
# attempt ends; a folder a killed worker left is swept when its job ends or is taken over, and by the watchdog.
JOB_WORK_DIR = Path(env("STUDIO_JOB_WORK_DIR", str(DATA_DIR / "work")))
# Request bodies too large to keep in memory are spooled here, not in the system's /tmp.
FILE_UPLOAD_TEMP_DIR = str(Path(env("STUDIO_UPLOAD_TEMP_DIR", str(DATA_DIR / "tmp"))))
# An uploaded archive is deleted once its import succeeded (true keeps it); one whose import failed or was
# cancelled is kept IMPORT_FAILED_UPLOAD_DAYS days, for a look at what went wrong, then swept.
IMPORT_KEEP_UPLOADS = env_bool("STUDIO_IMPORT_KEEP_UPLOADS", False)
IMPORT_FAILED_UPLOAD_DAYS = env_int("STUDIO_IMPORT_FAILED_UPLOAD_DAYS", 7)
# ... and those kept uploads hold at most this many bytes in all (default: one largest upload's worth): past it the
# oldest go first, so a run of failed or cancelled imports cannot fill the disk within the days above.
IMPORT_FAILED_UPLOADS_MAX_BYTES = env_int("STUDIO_IMPORT_FAILED_UPLOADS_MAX_BYTES", 2 * 1024**3)
# --- Jobs (studio/jobs.py) -------------------------------------------------------------------------------
# A running job whose heartbeat is older than this lost its worker: every worker's watchdog looks each
# JOB_WATCH_INTERVAL_S and sends it again, up to JOB_MAX_ATTEMPTS runs, then fails it. A job's own run beats
# several times within the window, so a dead worker's job is taken over within STALE + INTERVAL (80 s by default).
JOB_STALE_AFTER_S = env_int("STUDIO_JOB_STALE_AFTER_S", 60)
JOB_WATCH_INTERVAL_S = float(env("STUDIO_JOB_WATCH_INTERVAL_S", "20"))
JOB_MAX_ATTEMPTS = env_int("STUDIO_JOB_MAX_ATTEMPTS", 3)
# A job still queued after this long, while its queue holds fewer messages than there are such jobs, lost its
# message (a broker restarted without its data): the watchdog sends it again (studio.jobs.jobs_resend_lost).
JOB_QUEUED_LOST_AFTER_S = env_int("STUDIO_JOB_QUEUED_LOST_AFTER_S", 120)
# A job whose database connection drops retries its (idempotent) work this many times before failing.
JOB_DB_RETRIES = env_int("STUDIO_JOB_DB_RETRIES", 3)
# Queueing a job tries the broker briefly, then the request answers 503 (the job is marked failed).
JOB_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1}
# A worker sending a job's shards rides out a broker blip of about 15 s (a Redis restart) before giving the shard to
# the watchdog, which would send it only once the shard is stale (JOB_STALE_AFTER_S): no person waits on this send.
JOB_SHARD_PUBLISH_RETRY_POLICY = {"max_retries": 10, "interval_start": 0.5, "interval_step": 0.5, "interval_max": 2}
# Sharded jobs (studio/shards.py): a shard that raises is sent again until it was tried this many times.
JOB_SHARD_MAX_ATTEMPTS = env_int("STUDIO_JOB_SHARD_MAX_ATTEMPTS", 3)
# A job's last step after its shards (an export's bundle) is tried as many times, waiting this long before the
# second try and twice as long before each next one: a storage that hung for a while has answered again meanwhile.
JOB_ASSEMBLE_RETRY_PAUSE_S = float(env("STUDIO_JOB_ASSEMBLE_RETRY_PAUSE_S", "10"))
# Export shards: an export's accepted annotations, in trace order, this many a shard (each gives one to a few
# samples of the format); every worker on the queue builds shards at once, and the bundle holds one data file per
# shard and split. The plan depends on this and the data alone, so the bundle's bytes do not depend on the workers.
EXPORT_SHARD_ANNOTATIONS = env_int("STUDIO_EXPORT_SHARD_ANNOTATIONS", 2000)
# A checkpoint folder whose tokenizer counts each exported sample's text tokens (exports/tokens.py: the bundle's
# cutoff_len / max_length hold its longest sample). Unset: the text's UTF-8 bytes, an upper bound for Qwen's tokenizer.
EXPORT_TOKENIZER_DIR = env("STUDIO_EXPORT_TOKENIZER_DIR")
# Tests only: a pause per batch of annotations, so a worker can be killed mid-export.
EXPORT_THROTTLE_S = float(env("STUDIO_EXPORT_THROTTLE_S", "0"))
# Import shards: an import's trace units (a trace folder, a trace file, or a JSONL file of traces), in the order its
# importer finds them, this many a shard; every worker on the queue imports shards at once, each from its own part
# of the upload (traces.services.import_plan_make). Small: each part is a copy of its traces' files in storage.
IMPORT_SHARD_TRACES = env_int("STUDIO_IMPORT_SHARD_TRACES", 50)
# Tests only: a pause per trace unit, so a worker can be killed or an import cancelled mid-shard.
IMPORT_THROTTLE_S = float(env("STUDIO_IMPORT_THROTTLE_S", "0"))

# --- Models for pre-scoring ------------------------------------------------------------------
PRESCORE_MODEL_DIR = env("STUDIO_PRESCORE_MODEL_DIR")
# The gpu workers' greedy decoding into a static KV cache, compiled into CUDA graphs (prescoring.qwen2vl,
# Qwen2VLScorer.decode_batch). Off until measured on a GPU (docs/reliability.md).
PRESCORE_STATIC_DECODE = env_bool("STUDIO_PRESCORE_STATIC_DECODE", False)
# Checkpoint evaluation: a folder on the gpu workers whose sub-folders are checkpoints (the page offers them; a
# model_dir that is a bare name is looked up there). Unset: the page says to set it; paths still work.
EVALUATION_CHECKPOINTS_DIR = env("STUDIO_EVALUATION_CHECKPOINTS_DIR")
# Pre-scoring shards: whole traces packed up to this many steps; every worker on the queue takes shards at once.
PRESCORE_SHARD_STEPS = env_int("STUDIO_PRESCORE_SHARD_STEPS", 2000)
# Tests only: a pause per scored trace, so a worker can be killed or a job cancelled mid-shard.
PRESCORE_THROTTLE_S = float(env("STUDIO_PRESCORE_THROTTLE_S", "0"))
# On-policy alternatives (annotation/alternatives): k replies of the pre-scoring model (STUDIO_PRESCORE_MODEL_DIR)
# sampled at an annotation's step, each token at this temperature and nucleus top_p.
ALTERNATIVES_K = env_int("STUDIO_ALTERNATIVES_K", 4)
ALTERNATIVES_TEMPERATURE = float(env("STUDIO_ALTERNATIVES_TEMPERATURE", "1.0"))
ALTERNATIVES_TOP_P = float(env("STUDIO_ALTERNATIVES_TOP_P", "0.9"))
ALTERNATIVES_MAX_NEW_TOKENS = env_int("STUDIO_ALTERNATIVES_MAX_NEW_TOKENS", 128)

# --- Auth, API ------------------------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project-list"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_AGE = env_int("STUDIO_SESSION_AGE_S", 12 * 3600)
# Single sign-on through an OpenID Connect provider (studio/oidc.py; docs/deploy.md, "Single sign-on"): None unless
# STUDIO_OIDC_ISSUER is set; a configuration that is wrong stops the start with the variable named.
OIDC = oidc_config(os.environ, production=PRODUCTION)
# New passwords by the first (studio/hashers.py says why); the others check the hashes stored before, which are then
# stored again by the first at the person's next login.
PASSWORD_HASHERS = [
    "studio.hashers.StudioArgon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
REST_FRAMEWORK = {
    # The token first: DRF takes the first class's challenge for its answer to a missing or bad credential, so a bad
    # or revoked token is 401 with `WWW-Authenticate: Token` (the session's class has no challenge: it was 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "studio.security.ApiTokenAuthentication",
        "studio.security.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "studio.api.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "studio.api.PageNumbers",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "studio.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Trace Studio API",
    "DESCRIPTION": "Traces, annotations, reviews and SFT/DPO export bundles for reflection tuning of GUI agents.",
    "VERSION": APP_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ImportFormatEnum": "traces.api.import_format_choices",
        "ExportFormatEnum": "exports.formats.format_choices",
        "DeliveryStatusEnum": "webhooks.models.DeliveryStatus",
        "JobStatusEnum": "studio.models.JobStatus",
    },
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "studio.api.add_common_error_responses",
    ],
}

# Languages (docs/architecture.md, "Languages"): a person's account choice (studio.i18n), else the browser's
# Accept-Language, else English. The catalogs are locale/<language>/LC_MESSAGES/django.po (pages, messages) and
# djangojs.po (the pages' scripts, served by /jsi18n/), committed with their compiled .mo.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
# Dates on the pages follow the language (templates: date:"DATE_FORMAT" / "DATETIME_FORMAT"; scripts: Intl).
FORMAT_MODULE_PATH = ["studio.formats"]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Logs, metrics, errors (docs/deploy.md: "Logs", "Metrics", "Errors") -----------------------------------------
# json: one JSON object a line, a line per request and per job event, each naming its request id or job (production's
# default); plain: the readable lines of the embedded default, without the per-request lines.
LOG_FORMAT = env("STUDIO_LOG_FORMAT", "json" if PRODUCTION else "plain")
if LOG_FORMAT not in {"json", "plain"}:
    raise ImproperlyConfigured(f"STUDIO_LOG_FORMAT must be json or plain, not {LOG_FORMAT!r}")
from studio.logs import logging_config  # noqa: E402 - the logging setup lives beside its formatter

LOGGING = logging_config(log_format=LOG_FORMAT, level=env("STUDIO_LOG_LEVEL", "INFO"))

# Prometheus (studio/metrics.py): every process (web, workers) writes its counters into files in this folder and
# /metrics sums them, so it must be one folder all of a host's studio processes share (compose: a volume), emptied
# when the stack starts (compose: tmpfs).
METRICS_DIR = Path(env("STUDIO_METRICS_DIR", str(DATA_DIR / "metrics")))
try:
    METRICS_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(f"STUDIO_METRICS_DIR {METRICS_DIR} cannot be made: {exc.strerror}") from None
if not os.access(METRICS_DIR, os.W_OK):
    raise ImproperlyConfigured(f"STUDIO_METRICS_DIR {METRICS_DIR} is not writable by this process")
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(METRICS_DIR)  # prometheus-client reads it from the environment
# Who may scrape /metrics: addresses or networks (the client's address as studio.middleware.ClientAddressMiddleware
# decides it), comma-separated; "none": nobody. The public proxy does not pass /metrics (deploy/Caddyfile) either way.
_metrics_allow = env("STUDIO_METRICS_ALLOW", "127.0.0.1,::1")
METRICS_ALLOW = (
    [] if _metrics_allow.strip().lower() == "none" else [a.strip() for a in _metrics_allow.split(",") if a.strip()]
)
for _entry in METRICS_ALLOW:
    try:
        ipaddress.ip_network(_entry, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"STUDIO_METRICS_ALLOW: {_entry!r} is neither an address nor a network "
            "(write e.g. 127.0.0.1,10.0.0.0/8, or none)"
        ) from None

# Unexpected errors to an error tracker (studio/errortracker.py): off unless a DSN is set.
SENTRY_DSN = env("STUDIO_SENTRY_DSN")
if SENTRY_DSN:
    from studio.errortracker import dsn_problem, errortracker_init

    if problem := dsn_problem(SENTRY_DSN):
        raise ImproperlyConfigured(f"STUDIO_SENTRY_DSN is not a DSN ({problem}); copy it from the tracker's project")
    errortracker_init(dsn=SENTRY_DSN, environment=env("STUDIO_SENTRY_ENVIRONMENT", STUDIO_MODE), release=APP_VERSION)

# --- Security headers ------------------------------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the page's fetch() reads the token from the cookie

if PRODUCTION:
    if not SECRET_KEY or SECRET_KEY.startswith(INSECURE_KEY_PREFIX) or len(SECRET_KEY) < 50:
        raise ImproperlyConfigured("production needs STUDIO_SECRET_KEY: 50+ random characters, not the dev key")
    if DEMO_PASSWORD:
        raise ImproperlyConfigured("STUDIO_DEMO_PASSWORD is set: demo passwords exist only in demo mode")
    if DEBUG:
        raise ImproperlyConfigured("STUDIO_DEBUG must be off in production")
    SECURE_SSL_REDIRECT = env_bool("STUDIO_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("STUDIO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
elif DEMO_PASSWORD and STUDIO_MODE != "demo":
    raise ImproperlyConfigured("STUDIO_DEMO_PASSWORD is only accepted with STUDIO_MODE=demo")

# --- Webhooks (webhooks/): signed deliveries to leads' endpoints, retried with backoff ---------------------
# Plain http:// only to these hosts (tests, a receiver on the same machine); everything else must be https://.
WEBHOOKS_ALLOW_HTTP_HOSTS = [h for h in (env("STUDIO_WEBHOOKS_ALLOW_HTTP_HOSTS", "") or "").split(",") if h]
# Hosts inside the studio's own network (names, addresses or networks such as 10.20.0.0/16) that deliveries may reach;
# any other address that is not global is refused (webhooks/network.py: a lead would read what only the studio's
# machines reach). The hosts allowed plain http above are allowed too.
WEBHOOKS_ALLOW_PRIVATE_HOSTS = [
    h.strip() for h in (env("STUDIO_WEBHOOKS_ALLOW_PRIVATE_HOSTS", "") or "").split(",") if h.strip()
]
WEBHOOKS_CONNECT_TIMEOUT_S = float(env("STUDIO_WEBHOOKS_CONNECT_TIMEOUT_S", "3"))
WEBHOOKS_READ_TIMEOUT_S = float(env("STUDIO_WEBHOOKS_READ_TIMEOUT_S", "10"))
WEBHOOKS_MAX_ATTEMPTS = env_int("STUDIO_WEBHOOKS_MAX_ATTEMPTS", 6)
WEBHOOKS_RETRY_BASE_S = float(env("STUDIO_WEBHOOKS_RETRY_BASE_S", "10"))  # waits 10, 30, 90, 270, 810 s
# One attempt's whole time (connect, TLS, request, the answer's headers and body): a receiver that trickles its
# answer a byte at a time is cut off here, whatever the per-read timeout above lets through.
WEBHOOKS_DEADLINE_S = float(env("STUDIO_WEBHOOKS_DEADLINE_S", "15"))
# Deliveries in flight to one endpoint at once; the others wait (WEBHOOKS_BUSY_RETRY_S) without costing an attempt,
# so one slow endpoint holds at most this many of the webhooks workers' processes.
WEBHOOKS_ENDPOINT_CONCURRENCY = env_int("STUDIO_WEBHOOKS_ENDPOINT_CONCURRENCY", 2)
WEBHOOKS_BUSY_RETRY_S = float(env("STUDIO_WEBHOOKS_BUSY_RETRY_S", "5"))
# Deliveries in flight in one worker process at once (0: as many as its pool runs). A worker that also runs jobs
# (runstudio's, which sets it) gets a pool larger than this, so deliveries never take every thread from the jobs.
WEBHOOKS_DELIVERIES_PER_PROCESS = env_int("STUDIO_WEBHOOKS_DELIVERIES_PER_PROCESS", 0)
# The circuit breaker: after this many failed attempts in a row an endpoint is paused for WEBHOOKS_PAUSE_S (its
# deliveries wait, none is contacted); the first attempt after the pause tries again, and a failure pauses it anew.
WEBHOOKS_BREAKER_FAILURES = env_int("STUDIO_WEBHOOKS_BREAKER_FAILURES", 5)
WEBHOOKS_PAUSE_S = float(env("STUDIO_WEBHOOKS_PAUSE_S", "600"))
