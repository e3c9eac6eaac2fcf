"""Settings read from the environment.

With no environment at all the app runs on the embedded default: a SQLite file under ``var/``,
an in-memory channel layer and Celery tasks executed in-process. Set ``DATABASE_URL`` and
``REDIS_URL`` to use PostgreSQL and Redis.
"""
import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from simcore.version import ENGINE_VERSION

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("PLANNER_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean from the environment: 1/true/yes/on or 0/false/no/off."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def generated_secret_key(path: Path) -> str:
    """The embedded default's secret key: random, made on first start and kept in ``var/`` (readable
    by its owner only), so that sessions survive restarts and no two installations share a key."""
    try:
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(secrets.token_urlsafe(64))
    except FileExistsError:
        pass  # made by an earlier start, or by another process starting at the same moment
    return path.read_text().strip()


# DEBUG shows tracebacks and settings to whoever triggers an error: only when asked for (DEBUG=true).
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "") or generated_secret_key(VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.humanize",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "axes",
    "csp",
    "django_prometheus",
    "planner",
    "twin",
    "frontend",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "config.observability.RequestIdMiddleware",
    "planner.api.problems.ProblemDetailsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "config.limits.BodySizeLimitMiddleware",
    "config.limits.NulQueryMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
    "config.lockout.LoginReservationMiddleware",
    "config.heavy.HeavyRequestMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

# Scripts, styles, images and connections (websockets included) from this site only: no inline
# script or style, no plugins, no framing. Pages start their modules from frontend/js/main.js.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'planner.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")),
        conn_health_checks=True,
    )
}
# SQLite (the embedded default): write-ahead logging so readers never wait for a writer, writers
# waiting their turn (20 s) instead of failing with "database is locked", and each write transaction
# taking the lock when it starts (Django 5.1's transaction_mode), which keeps that wait deadlock-free.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", timeout=20, transaction_mode="IMMEDIATE")
# A pool of PostgreSQL connections per process (Django's psycopg pool), so requests do not each open
# one: under ASGI every request runs on a thread of its own, where persistent connections do not help.
DB_POOL_MAX = int(os.environ.get("DB_POOL_MAX", "8"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DB_POOL", True):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # With CONN_HEALTH_CHECKS on, Django has the pool check each connection before handing it out, so
    # one the server dropped is replaced instead of failing a request.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1, "max_size": DB_POOL_MAX, "timeout": 10}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed logins on every path (the login page, the admin, POST /api/auth/token/) are recorded per
# (username, client address) pair by django-axes. After LOGIN_DELAY_AFTER_FAILURES failures each
# further attempt on the pair waits LOGIN_DELAY_BASE_S, doubled per failure, at most
# LOGIN_LOCKOUT_MINUTES (429 with Retry-After), until a success clears its own pair or staff clear it
# (the admin's "Access attempts", or `manage.py axes_reset_username` / `axes_reset_ip`). And
# LOGIN_ADDRESS_FAILURE_LIMIT failures from one address, any usernames, lock the address for
# LOGIN_LOCKOUT_MINUTES, which no success resets (config.lockout); axes' own pair lock is set at the
# same count, which no pair reaches before its address does.
AUTHENTICATION_BACKENDS = ["config.lockout.AddressCeilingBackend", "config.lockout.PairDelayBackend",
                           "axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_DELAY_AFTER_FAILURES = int(os.environ.get("LOGIN_DELAY_AFTER_FAILURES", "3"))
LOGIN_DELAY_BASE_S = float(os.environ.get("LOGIN_DELAY_BASE_S", "1"))
LOGIN_ADDRESS_FAILURE_LIMIT = int(os.environ.get("LOGIN_ADDRESS_FAILURE_LIMIT", "20"))
# Login attempts a web process checks at once (each holds a database connection through its slow
# password hash), half its pool by default so that a burst of logins leaves the other half to
# everyone else; an attempt that finds no turn within LOGIN_QUEUE_WAIT_S answers 503 with Retry-After.
LOGIN_CHECKS_AT_ONCE = int(os.environ.get("LOGIN_CHECKS_AT_ONCE", str(max(1, DB_POOL_MAX // 2))))
# Requests that run the engine (config.heavy.HeavyRequestMiddleware): at most this many of one
# user's at once across processes (429 beyond), and at most this many per process (a quarter of its
# pool by default; one waiting longer than HEAVY_QUEUE_WAIT_S for a turn answers 503), so that one
# user's burst neither takes the pool nor the cores from other users' reads. A plan page runs its
# evaluation and then its bill, one at a time, so that its user's download has a slot meanwhile.
HEAVY_REQUESTS_PER_USER = int(os.environ.get("HEAVY_REQUESTS_PER_USER", "2"))
HEAVY_REQUESTS_AT_ONCE = int(os.environ.get("HEAVY_REQUESTS_AT_ONCE", str(max(1, DB_POOL_MAX // 4))))
HEAVY_QUEUE_WAIT_S = float(os.environ.get("HEAVY_QUEUE_WAIT_S", "5"))
# Profiler traces (POST /api/measurements/): one of more than TRACE_INLINE_MAX_BYTES of JSON once
# gunzipped is read by a worker (202), one a user at a time; none of more than TRACE_MAX_JSON_BYTES is
# read (a 2 MiB upload of gzip may hold gigabytes: 256 MiB of JSON reads in about 6 s).
TRACE_INLINE_MAX_BYTES = int(os.environ.get("TRACE_INLINE_MAX_BYTES", str(8 * 2**20)))
TRACE_MAX_JSON_BYTES = int(os.environ.get("TRACE_MAX_JSON_BYTES", str(256 * 2**20)))
LOGIN_QUEUE_WAIT_S = float(os.environ.get("LOGIN_QUEUE_WAIT_S", "2"))
AXES_FAILURE_LIMIT = LOGIN_ADDRESS_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a refused attempt is not a guess
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False
AXES_LOCKOUT_CALLABLE = "config.lockout.lockout_response"
# Behind a proxy that sets X-Forwarded-For, set LOGIN_PROXY_COUNT to the number of proxies so that
# the client's address, not the proxy's, is counted.
AXES_IPWARE_PROXY_COUNT = int(os.environ.get("LOGIN_PROXY_COUNT", "0")) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = (["HTTP_X_FORWARDED_FOR"] if AXES_IPWARE_PROXY_COUNT else []) + ["REMOTE_ADDR"]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Redis, when configured, carries the channel layer and the Celery broker; without it the
# channel layer lives in memory and tasks run in the calling process.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache holds request throttles and memoized evaluations. With CACHE_URL, a Redis database shared
# by every process (give it a database of its own: clearing the cache empties the whole database);
# without, each process's memory, so N web processes allow N times each throttle rate.
CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "config.cache.FailSoftRedisCache",
            "LOCATION": CACHE_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 600
CELERY_TASK_SOFT_TIME_LIMIT = 540
CELERY_TASK_ROUTES = {"planner.tasks.run_sweep_chunk": {"queue": "sim"},
                      "twin.tasks.ingest_kernel_log": {"queue": "celery"}}
# An unacknowledged task (its worker died) is redelivered once it is this many seconds old, by the
# next scan of any worker. Kombu scans only every tenth restore interval (100 s) by default; every
# interval (at most 10 s) is cheap (one sorted-set range read in Redis) and keeps redelivery prompt.
# A scan holds a lock in Redis that outlives a worker killed during the scan by its expiry (kombu:
# 300 s, during which no worker scans); a scan takes milliseconds, so the lock expires sooner.
visibility_timeout_s = int(os.environ.get("CELERY_VISIBILITY_TIMEOUT_S", "3600"))
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": visibility_timeout_s,
    "unacked_restore_interval": min(10, visibility_timeout_s),
    "unacked_restore_throttle": 1,
    "unacked_mutex_expire": min(60, visibility_timeout_s),
}

SWEEP_MAX_POINTS = int(os.environ.get("SWEEP_MAX_POINTS", "5000000"))
# Without a broker (the embedded default) a sweep's chunks run inside the request that submits it:
# 200,000 points are about 4 s of engine work there (20 us a point, simcore.budget.WorkCosts).
SWEEP_IN_PROCESS_MAX_POINTS = int(os.environ.get("SWEEP_IN_PROCESS_MAX_POINTS", "200000"))
TWIN_MAX_RUNNING_PER_USER = int(os.environ.get("TWIN_MAX_RUNNING_PER_USER", "4"))
TWIN_MAX_GPUS = int(os.environ.get("TWIN_MAX_GPUS", "131072"))
# A kernel log of more lines than this is ingested by a Celery task, its progress readable at
# /api/twins/<id>/ingests/<ingest>/; shorter ones in their request (10,000 lines take about 1 s).
TWIN_INGEST_INLINE_MAX_LINES = int(os.environ.get("TWIN_INGEST_INLINE_MAX_LINES", "10000"))
# The largest request body: larger ones answer 413 before anything reads them.
API_MAX_BODY_BYTES = int(os.environ.get("API_MAX_BODY_BYTES", str(2 * 1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
# The largest body of a request that carries no credentials (no Authorization header, no session
# cookie), on any path: logging in takes a few hundred bytes. Refused before it is read.
ANONYMOUS_MAX_BODY_BYTES = int(os.environ.get("ANONYMOUS_MAX_BODY_BYTES", str(64 * 1024)))
# A kernel-log upload (POST /api/twins/<id>/ingest-log/, a multipart file, gzip or plain) may be this
# large, and its text this large once decompressed.
KERNEL_LOG_MAX_BYTES = int(os.environ.get("KERNEL_LOG_MAX_BYTES", str(32 * 1024 * 1024)))
SWEEP_CHUNK_POINTS = int(os.environ.get("SWEEP_CHUNK_POINTS", "50000"))
# Each user's share of the workers: at most this many of their sweep chunks queued or running at
# once (the next are queued as these finish), so another user's sweep waits behind a few chunks,
# not behind whole sweeps. Quotas: the points of a user's unfinished sweeps (429 beyond), and the
# bytes of results their sweeps store (409 once reached: they delete sweeps to free it).
SWEEP_CHUNKS_IN_FLIGHT_PER_USER = int(os.environ.get("SWEEP_CHUNKS_IN_FLIGHT_PER_USER", "4"))
SWEEP_USER_MAX_QUEUED_POINTS = int(os.environ.get("SWEEP_USER_MAX_QUEUED_POINTS", "20000000"))
SWEEP_USER_MAX_STORED_BYTES = int(os.environ.get("SWEEP_USER_MAX_STORED_BYTES", str(2 * 1024 ** 3)))
# The watch for lost sweep chunks (planner.chunk_watch): a worker's claim on the chunk it runs
# lapses this long after its last renewal (every third of it), and one worker scans this often.
SWEEP_CLAIM_TTL_S = int(os.environ.get("SWEEP_CLAIM_TTL_S", "20"))
SWEEP_WATCH_S = float(os.environ.get("SWEEP_WATCH_S", "10"))

# Anonymous read access to the catalogue is off unless this setting opens it.
CATALOG_PUBLIC_READ = env_bool("CATALOG_PUBLIC_READ", False)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "planner.api.authentication.AccessTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "planner.api.permissions.TokenScopePermission",
        "planner.api.permissions.CatalogPermission",
    ],
    "DEFAULT_PAGINATION_CLASS": "planner.api.pagination.PlannerPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "planner.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies only, but where a form or a file is the point: logging in (curl -d), measurement
    # files and kernel logs (multipart), each view naming its own parsers. A client generated from
    # the schema then sends JSON, as every other operation is declared.
    "DEFAULT_PARSER_CLASSES": ["planner.api.parsers.BoundedJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_THROTTLE_RATES": {
        "evaluate": os.environ.get("THROTTLE_EVALUATE", "120/minute"),
        "sweep": os.environ.get("THROTTLE_SWEEP", "30/minute"),
        "twin": os.environ.get("THROTTLE_TWIN", "30/minute"),
        "login": os.environ.get("THROTTLE_LOGIN", "20/minute"),
    },
}
# What one API request may ask of the engine.
API_MAX_SCENARIO_POINTS = int(os.environ.get("API_MAX_SCENARIO_POINTS", "100000"))
API_MAX_MONTE_CARLO_REPLICAS = int(os.environ.get("API_MAX_MONTE_CARLO_REPLICAS", "1000"))
# The engine seconds one web request may ask for, estimated before the work starts (simcore.budget):
# evaluations, previews, comparisons and twin creation over it answer 400 with the estimate.
API_WORK_BUDGET_S = float(os.environ.get("API_WORK_BUDGET_S", "1.0"))
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "AI cluster planner API",
    "DESCRIPTION": "Hardware catalogue, cluster plans and evaluations for AI training clusters.",
    "VERSION": ENGINE_VERSION,  # the project's version: the web distribution and the engine are released together
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "planner.api.schema.document_errors",
                             "planner.api.schema.any_of_for_any", "planner.api.schema.nullable_as_3_1"],
    # 3.1: JSON Schema 2020-12, which the scenario document's schema (simcore.document.json_schema) is.
    "OAS_VERSION": "3.1.0",
    "ENUM_NAME_OVERRIDES": {
        "PcieGenerationEnum": "planner.models.catalog.PCIE_GENERATIONS",
        "PcieLanesEnum": "planner.models.catalog.PCIE_LANES",
        "NetworkProtocolEnum": "planner.choices.NetworkProtocol",
        "ConfidenceEnum": "planner.choices.Confidence",
        "VisibilityEnum": "planner.models.plans.Visibility",
        "WorkloadKindEnum": "planner.models.plans.WORKLOAD_KINDS",
        "LinkPartKindEnum": "planner.choices.LinkPartKind",
        "MeasurementKindEnum": "planner.models.measurements.Measurement.Kind",
        "MeasuredCollectiveEnum": "simcore.tools.measurements.COLLECTIVES",
        "GradientCollectiveEnum": "planner.models.plans.GRADIENT_COLLECTIVES",
        "TraceReadStatusEnum": "planner.models.measurements.TraceRead.Status",
    },
}

# One JSON object per log line (LOG_FORMAT=text for a terminal), each with the request id.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "json")
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.observability.RequestIdFilter"}},
    "formatters": {
        "json": {"()": "config.observability.UtcJsonFormatter",
                 "format": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(task_id)s %(message)s",
                 "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"}},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s %(task_id)s] %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django-axes logs every login at INFO; its lockouts and repeated failures are warnings.
    "loggers": {"axes": {"level": "WARNING"}},
}

# Celery workers log through LOGGING above (JSON lines), not through Celery's own text handlers;
# Python warnings (Celery's superuser warning among them) become log records too.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
logging.captureWarnings(True)

# Who may read /metrics/ without logging in: the Prometheus scraper's addresses.
METRICS_ALLOWED_ADDRESSES = env_list("METRICS_ALLOWED_ADDRESSES", "127.0.0.1,::1")

# Retention (days; 0 keeps forever), enforced hourly by Celery beat (planner.tasks.enforce_retention)
# or by `manage.py enforce_retention`: finished sweeps with their results and trace reads, twin events, twin
# samples and kernel-log ingests (each app registers its own, planner.services.retention.register_retention).
RETENTION_SWEEP_DAYS = float(os.environ.get("RETENTION_SWEEP_DAYS", "90"))
RETENTION_TWIN_EVENT_DAYS = float(os.environ.get("RETENTION_TWIN_EVENT_DAYS", "30"))
RETENTION_TWIN_SAMPLE_DAYS = float(os.environ.get("RETENTION_TWIN_SAMPLE_DAYS", "30"))
CELERY_BEAT_SCHEDULE = {
    "enforce-retention": {"task": "planner.tasks.enforce_retention", "schedule": 3600.0},
}
