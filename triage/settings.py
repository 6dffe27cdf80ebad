"""Faultline settings, read from the environment (see .env.example).

With nothing set this is the embedded default: SQLite in ``var/`` and Celery tasks run in-process.
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url

from engine.limits import Limits
from triage.env import (
    env_bool,
    env_choices,
    env_int,
    env_list,
    env_networks,
    env_secret_file,
    env_secret_key,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FAULTLINE_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_secret_key("DJANGO_SECRET_KEY", VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# HTTPS (docs/operations.md, "Production settings"): cookies are Secure unless DEBUG (or told otherwise);
# behind a TLS-terminating proxy set DJANGO_SECURE_PROXY_SSL_HEADER (e.g. HTTP_X_FORWARDED_PROTO=https),
# and HSTS and the redirect to HTTPS where this process, not the proxy, should send them.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", not DEBUG)
SESSION_COOKIE_HTTPONLY = CSRF_COOKIE_HTTPONLY = True  # htmx sends the CSRF token from the page, not the cookie
_PROXY_SSL_HEADER = env_str("DJANGO_SECURE_PROXY_SSL_HEADER", "")
SECURE_PROXY_SSL_HEADER = tuple(_PROXY_SSL_HEADER.split("=", 1)) if "=" in _PROXY_SSL_HEADER else None
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
CONTENT_SECURITY_POLICY = env_str(
    "DJANGO_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "axes",
    "rules",
    "diagnoses",
    "handoffs",
    "api",
    "pages",
    "workbench",
    "triage",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "triage.security.ContentSecurityPolicy",
    "triage.outage_responses.Outages",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "triage.urls"
WSGI_APPLICATION = "triage.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'faultline.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,  # a connection the server dropped (restart, failover) is replaced, not a 500
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Sign-in throttling (django-axes): after FAULTLINE_LOGIN_FAILURE_LIMIT wrong passwords for one user name from one
# address, that pair is locked out for FAULTLINE_LOGIN_LOCKOUT_MINUTES (429, the lock-out page); admins see the
# failures and locks in the admin (Axes: access attempts) and lift one there or with `manage.py axes_reset_username`.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("FAULTLINE_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("FAULTLINE_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
AXES_VERBOSE = False  # no banner on every command's stderr, no line per sign-in: the admin lists them
AXES_IPWARE_META_PRECEDENCE_ORDER = env_list(
    "FAULTLINE_CLIENT_IP_HEADERS", ["REMOTE_ADDR"]
)  # behind a proxy: its header

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

# Celery: without a broker the tasks run in-process (the embedded default).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True  # tasks write their results to the database
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("FAULTLINE_TASK_SOFT_TIME_LIMIT", 300)
CELERY_TASK_TIME_LIMIT = env_int("FAULTLINE_TASK_TIME_LIMIT", 360)
CELERY_WORKER_MAX_TASKS_PER_CHILD = env_int("FAULTLINE_WORKER_MAX_TASKS_PER_CHILD", 1000)
# Celery's Django fix-up closes a worker's database connection every this many tasks (instead of around every task);
# in between, triage/celery.py keeps it only after a task that succeeded and left it idle.
CELERY_DB_REUSE_MAX = CELERY_WORKER_MAX_TASKS_PER_CHILD
# A message a killed worker never acknowledged is delivered again after this many seconds; keep it
# above the hard time limit. The reaper below usually re-enqueues such an attempt sooner.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("FAULTLINE_BROKER_VISIBILITY_TIMEOUT", 3600)}
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-attempts": {
        "task": "diagnoses.tasks.reap_stuck_attempts",
        "schedule": float(env_int("FAULTLINE_REAPER_INTERVAL", 60)),
    },
    "prune-bundles": {"task": "diagnoses.tasks.prune_bundles", "schedule": 24 * 3600.0},
    "reap-lost-batches": {
        "task": "workbench.tasks.reap_lost_batches",
        "schedule": float(env_int("FAULTLINE_REAPER_INTERVAL", 60)),
    },
    # Discovery: every tick, each enabled cluster whose poll is due is polled (its own interval, backoff).
    "poll-clusters": {
        "task": "diagnoses.tasks.poll_clusters",
        "schedule": float(env_int("FAULTLINE_DISCOVERY_TICK", 15)),
    },
    # Hand-offs: send the notifications whose grouping window ended, check the triage backlog.
    "send-notifications": {
        "task": "handoffs.tasks.send_due_notifications",
        "schedule": float(env_int("FAULTLINE_NOTIFICATION_TICK", 15)),
    },
}

# Faultline
FAULTLINE_BUNDLE_ROOT = Path(env_str("FAULTLINE_BUNDLE_ROOT", str(VAR_DIR / "bundles")))
# Where bundles live: "" (the folder FAULTLINE_BUNDLE_ROOT, the embedded default) or an S3-compatible object store,
# s3://BUCKET/PREFIX, shared by every web and worker machine (docs/operations.md, "A fleet"). Then each machine keeps
# its staging folder and a cache of bundles it fetched for the engine under FAULTLINE_BUNDLE_ROOT, the cache trimmed
# to FAULTLINE_BUNDLE_CACHE_BYTES after each use. Credentials: boto3's own (AWS_ACCESS_KEY_ID, a profile, a role).
FAULTLINE_BUNDLE_STORE = env_str("FAULTLINE_BUNDLE_STORE", "")
FAULTLINE_S3_ENDPOINT_URL = env_str("FAULTLINE_S3_ENDPOINT_URL", "")  # MinIO, Ceph, ...: the store's URL
FAULTLINE_S3_REGION = env_str("FAULTLINE_S3_REGION", "us-east-1")
FAULTLINE_S3_TIMEOUT = env_int("FAULTLINE_S3_TIMEOUT", 20)  # seconds to connect, and to wait for a read
FAULTLINE_BUNDLE_CACHE_BYTES = env_int("FAULTLINE_BUNDLE_CACHE_BYTES", 8 << 30)
# Bundles of attempts that ended more than this many days ago are removed (beat, daily; manage.py
# prune_bundles); diagnoses and evidence stay. 0: kept forever.
FAULTLINE_RETENTION_DAYS = env_int("FAULTLINE_RETENTION_DAYS", 0)
FAULTLINE_RULES_PATH = Path(env_str("FAULTLINE_RULES_PATH", str(BASE_DIR / "rules" / "packs" / "default")))
# Uploaded bundles (.tar.gz): the largest body, and what its extraction may write.
FAULTLINE_UPLOAD_MAX_BYTES = env_int("FAULTLINE_UPLOAD_MAX_BYTES", 256 << 20)
FAULTLINE_BUNDLE_MAX_BYTES = env_int("FAULTLINE_BUNDLE_MAX_BYTES", 2 << 30)
FAULTLINE_BUNDLE_MAX_FILES = env_int("FAULTLINE_BUNDLE_MAX_FILES", 10_000)
FAULTLINE_BUNDLE_MAX_NAME = env_int("FAULTLINE_BUNDLE_MAX_NAME", 1024)  # characters of a member's path
# Gathered bundles: each log stream, and all of them, copied up to this many bytes (their beginning
# and end kept; the cut reported in the diagnosis's sources).
FAULTLINE_GATHER_STREAM_MAX_BYTES = env_int("FAULTLINE_GATHER_STREAM_MAX_BYTES", 256 << 20)
FAULTLINE_GATHER_MAX_BYTES = env_int("FAULTLINE_GATHER_MAX_BYTES", 2 << 30)
# What the engine reads of a bundle (engine/limits.py, docs/operations.md): a longer log line is cut
# and flagged; a larger or deeper JSON file is reported unreadable (attempt.json: refused); events and
# series past their counts are left out and reported; more nodes or ranks are refused.
FAULTLINE_LINE_MAX_BYTES = env_int("FAULTLINE_LINE_MAX_BYTES", Limits.line_bytes)
FAULTLINE_JSON_MAX_BYTES = env_int("FAULTLINE_JSON_MAX_BYTES", Limits.json_bytes)
FAULTLINE_JSON_MAX_DEPTH = env_int("FAULTLINE_JSON_MAX_DEPTH", Limits.json_depth)
FAULTLINE_EVENTS_MAX = env_int("FAULTLINE_EVENTS_MAX", Limits.events)
FAULTLINE_SERIES_MAX = env_int("FAULTLINE_SERIES_MAX", Limits.series)
FAULTLINE_NODES_MAX = env_int("FAULTLINE_NODES_MAX", Limits.nodes)
FAULTLINE_RANKS_MAX = env_int("FAULTLINE_RANKS_MAX", Limits.ranks)
# POST /api/v1/analyze answers within this many seconds (422 past it; keep it below the web server's timeout).
FAULTLINE_ANALYZE_TIME_LIMIT = env_int("FAULTLINE_ANALYZE_TIME_LIMIT", 20)
# The pipeline: transient connector errors are retried with exponential backoff this many times;
# an attempt analysing for longer than FAULTLINE_STUCK_AFTER seconds (its worker was lost) is
# re-enqueued by the reaper, at most FAULTLINE_MAX_ANALYSIS_RUNS analyses in all.
FAULTLINE_GATHER_RETRIES = env_int("FAULTLINE_GATHER_RETRIES", 5)
FAULTLINE_STUCK_AFTER = env_int("FAULTLINE_STUCK_AFTER", CELERY_TASK_TIME_LIMIT + 60)
FAULTLINE_MAX_ANALYSIS_RUNS = env_int("FAULTLINE_MAX_ANALYSIS_RUNS", 3)
# An attempt queued for longer than this with no analysis in flight (its message lost with the broker,
# or never published) is queued again by the reaper; keep it above the longest retry backoff (600 s).
FAULTLINE_REQUEUE_AFTER = env_int("FAULTLINE_REQUEUE_AFTER", 900)
# The rule workbench's backtests and reanalyses: at most this many attempts, stopped after this many
# seconds (keep it below FAULTLINE_TASK_SOFT_TIME_LIMIT).
FAULTLINE_BATCH_MAX_ATTEMPTS = env_int("FAULTLINE_BATCH_MAX_ATTEMPTS", 2000)
FAULTLINE_BATCH_TIME_LIMIT = env_int("FAULTLINE_BATCH_TIME_LIMIT", 240)
# Without a broker (`make run`: tasks in-process) a backtest or reanalysis runs in a thread of the web process,
# so that its page answers at once and shows its progress; with a broker a worker runs it.
FAULTLINE_BATCH_IN_THREAD = env_bool("FAULTLINE_BATCH_IN_THREAD", not env_str("CELERY_BROKER_URL", ""))
# Discovery: a cluster whose poll fails, or a log or metric source that fails, is backed off
# exponentially (the poll interval, or FAULTLINE_SOURCE_BACKOFF seconds, doubled per failure) up to
# FAULTLINE_BACKOFF_MAX seconds. Connector kinds beyond the built-in ones: dotted paths allowed here.
FAULTLINE_SOURCE_BACKOFF = env_int("FAULTLINE_SOURCE_BACKOFF", 60)
# Gathering an attempt's logs and metrics ends this many seconds after it began, well below the task's soft time limit
# (FAULTLINE_TASK_SOFT_TIME_LIMIT): a source still unanswered then is a gap in the diagnosis, and backed off.
FAULTLINE_GATHER_DEADLINE = env_int("FAULTLINE_GATHER_DEADLINE", 60)
FAULTLINE_BACKOFF_MAX = env_int("FAULTLINE_BACKOFF_MAX", 3600)
FAULTLINE_CONNECTOR_PATHS = env_list("FAULTLINE_CONNECTOR_PATHS", [])
# The node page: a node that was the root cause of at least FAULTLINE_REPEAT_OFFENDER_COUNT attempts
# that ended in the last FAULTLINE_REPEAT_OFFENDER_DAYS days is badged a repeat offender.
FAULTLINE_REPEAT_OFFENDER_COUNT = env_int("FAULTLINE_REPEAT_OFFENDER_COUNT", 3)
FAULTLINE_REPEAT_OFFENDER_DAYS = env_int("FAULTLINE_REPEAT_OFFENDER_DAYS", 30)
# Gathering writes into each bundle the verdicts of record of its nodes in the FAULTLINE_HISTORY_DAYS days before the
# attempt started (history/, docs/bundles.md), which rules may weigh (docs/rules.md, "History").
FAULTLINE_HISTORY_DAYS = env_int("FAULTLINE_HISTORY_DAYS", 14)
# "What changed" compares a failed attempt with the last earlier one that succeeded and shares the first of these keys
# with it that finds one: "job" (the same job: a requeue's earlier run), "name and user" (the same job name and user on
# the same cluster), "name" (the same job name on the same cluster). docs/api.md, "changes".
COMPARISON_KEYS = ("job", "name and user", "name")
FAULTLINE_COMPARE_BY = env_choices("FAULTLINE_COMPARE_BY", ["job", "name and user"], COMPARISON_KEYS)
# Hand-offs (docs/handoffs.md). /metrics answers a scraper with the bearer token (the variable, or the file
# FAULTLINE_METRICS_TOKEN_FILE names) or from one of the networks (CIDR); with neither it refuses every scrape.
FAULTLINE_METRICS_TOKEN = env_secret_file("FAULTLINE_METRICS_TOKEN")
FAULTLINE_METRICS_NETWORKS = env_networks("FAULTLINE_METRICS_NETWORKS")
FAULTLINE_METRICS_MAX_NODES = env_int("FAULTLINE_METRICS_MAX_NODES", 50)
FAULTLINE_METRICS_CACHE_SECONDS = env_int("FAULTLINE_METRICS_CACHE_SECONDS", 15)  # 0: collect at every scrape
# Notifications link to the pages under this URL; a failed delivery is tried again RETRIES times, BACKOFF seconds
# later, doubled per retry (at most 10 minutes).
FAULTLINE_BASE_URL = env_str("FAULTLINE_BASE_URL", "http://localhost:8000").rstrip("/")
FAULTLINE_NOTIFICATION_RETRIES = env_int("FAULTLINE_NOTIFICATION_RETRIES", 5)
FAULTLINE_NOTIFICATION_BACKOFF = env_int("FAULTLINE_NOTIFICATION_BACKOFF", 10)  # seconds, doubled per retry
FAULTLINE_NOTIFICATION_TIMEOUT = env_int("FAULTLINE_NOTIFICATION_TIMEOUT", 10)
# E-mail notifications go through Django's mail settings.
EMAIL_BACKEND = env_str("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_secret_file("DJANGO_EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "faultline@localhost")

# The API: token or session authentication everywhere, one error format (api/conventions.py).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "api.conventions.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.conventions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Faultline API",
    "DESCRIPTION": (
        "Failure triage for distributed AI training. Every call needs `Authorization: Token <key>` or a "
        'session. Errors always have the shape `{"error": {"code": str, "message": str, "field": '
        "str|null}}`."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI served from the app itself (drf-spectacular-sidecar): no CDN, works air-gapped.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"OutcomeEnum": "diagnoses.models.Diagnosis.Outcome"},
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.conventions.document_errors"],
}
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "pages:overview"
LOGOUT_REDIRECT_URL = "login"  # signing out lands on the sign-in page

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("FAULTLINE_LOG_LEVEL", "INFO")},
    # In-process tasks (no broker) would log every task run into the command's or server's output.
    "loggers": {"celery.app.trace": {"level": "WARNING" if CELERY_TASK_ALWAYS_EAGER else "INFO"}},
}
