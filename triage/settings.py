"""Faultline settings, read from the environment (see .env.example).

With nothing set this is the embedded default: SQLite in ``var/`` and Celery tasks run in-process.
"""

from pathlib import Path

import dj_database_url

from engine.limits import Limits
from triage.env import env_bool, env_int, env_list, env_secret_key, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FAULTLINE_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_secret_key("DJANGO_SECRET_KEY", VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

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
    "rules",
    "diagnoses",
    "api",
    "pages",
    "workbench",
    "triage",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
# A message a killed worker never acknowledged is delivered again after this many seconds; keep it
# above the hard time limit. The reaper below usually re-enqueues such an attempt sooner.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("FAULTLINE_BROKER_VISIBILITY_TIMEOUT", 3600)}
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-attempts": {
        "task": "diagnoses.tasks.reap_stuck_attempts",
        "schedule": float(env_int("FAULTLINE_REAPER_INTERVAL", 60)),
    },
    # Discovery: every tick, each enabled cluster whose poll is due is polled (its own interval, backoff).
    "poll-clusters": {
        "task": "diagnoses.tasks.poll_clusters",
        "schedule": float(env_int("FAULTLINE_DISCOVERY_TICK", 15)),
    },
}

# Faultline
FAULTLINE_BUNDLE_ROOT = Path(env_str("FAULTLINE_BUNDLE_ROOT", str(VAR_DIR / "bundles")))
FAULTLINE_RULES_PATH = Path(env_str("FAULTLINE_RULES_PATH", str(BASE_DIR / "rules" / "packs" / "default")))
# Uploaded bundles (.tar.gz): the largest body, and what its extraction may write.
FAULTLINE_UPLOAD_MAX_BYTES = env_int("FAULTLINE_UPLOAD_MAX_BYTES", 256 << 20)
FAULTLINE_BUNDLE_MAX_BYTES = env_int("FAULTLINE_BUNDLE_MAX_BYTES", 2 << 30)
FAULTLINE_BUNDLE_MAX_FILES = env_int("FAULTLINE_BUNDLE_MAX_FILES", 10_000)
FAULTLINE_BUNDLE_MAX_NAME = env_int("FAULTLINE_BUNDLE_MAX_NAME", 1024)  # characters of a member's path
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
# The rule workbench's backtests and reanalyses: at most this many attempts, stopped after this many
# seconds (keep it below FAULTLINE_TASK_SOFT_TIME_LIMIT).
FAULTLINE_BATCH_MAX_ATTEMPTS = env_int("FAULTLINE_BATCH_MAX_ATTEMPTS", 2000)
FAULTLINE_BATCH_TIME_LIMIT = env_int("FAULTLINE_BATCH_TIME_LIMIT", 240)
# Discovery: a cluster whose poll fails, or a log or metric source that fails, is backed off
# exponentially (the poll interval, or FAULTLINE_SOURCE_BACKOFF seconds, doubled per failure) up to
# FAULTLINE_BACKOFF_MAX seconds. Connector kinds beyond the built-in ones: dotted paths allowed here.
FAULTLINE_SOURCE_BACKOFF = env_int("FAULTLINE_SOURCE_BACKOFF", 60)
FAULTLINE_BACKOFF_MAX = env_int("FAULTLINE_BACKOFF_MAX", 3600)
FAULTLINE_CONNECTOR_PATHS = env_list("FAULTLINE_CONNECTOR_PATHS", [])
# The node page: a node that was the root cause of at least FAULTLINE_REPEAT_OFFENDER_COUNT attempts
# that ended in the last FAULTLINE_REPEAT_OFFENDER_DAYS days is badged a repeat offender.
FAULTLINE_REPEAT_OFFENDER_COUNT = env_int("FAULTLINE_REPEAT_OFFENDER_COUNT", 3)
FAULTLINE_REPEAT_OFFENDER_DAYS = env_int("FAULTLINE_REPEAT_OFFENDER_DAYS", 30)

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("FAULTLINE_LOG_LEVEL", "INFO")},
    # In-process tasks (no broker) would log every task run into the command's or server's output.
    "loggers": {"celery.app.trace": {"level": "WARNING" if CELERY_TASK_ALWAYS_EAGER else "INFO"}},
}
