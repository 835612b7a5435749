"""Settings for flagadmin, read from the environment with safe defaults for local use.

Every variable is listed in `.env.example`. A `.env` file in the project folder is read too
(without overriding variables that are already set), so `scripts/serve` can keep a generated
SECRET_KEY between runs.
"""

import importlib.util
import os
import warnings
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _load_dotenv(path: Path) -> None:
    if not path.is_file():
        return
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        os.environ.setdefault(key.strip(), value.strip().strip("'\""))


# ENV_FILE names another file to read; set it empty to read none.
_ENV_FILE = os.environ.get("ENV_FILE", str(BASE_DIR / ".env"))
if _ENV_FILE:
    _load_dotenv(Path(_ENV_FILE))


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


# Seconds; see flagadmin/core/db.py. libpq treats a connect timeout under 2 s as 2 s.
DB_CONNECT_TIMEOUT = max(2, round(env_seconds("DB_CONNECT_TIMEOUT", 2)))
DB_STATEMENT_TIMEOUT = env_seconds("DB_STATEMENT_TIMEOUT", 3)
# Server-side prepared statements where the code asks for them (the token lookup, a flag
# creation's statements, the projects list's); off for a connection pooler that cannot keep
# them (PgBouncer before 1.22, where psycopg's DEALLOCATE ALL after a rollback is refused).
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# Seconds a worker keeps a project's encoded entry of the projects list at most; within that,
# only while the project's version (ProjectListVersion) is the same. 0: compute every entry.
PROJECTS_LIST_ENTRY_MAX_AGE = env_seconds("PROJECTS_LIST_ENTRY_MAX_AGE", 30)
# Concurrent reads of the projects list, or of one project's flags, in one worker share one
# computation that began after they all arrived (flagadmin/core/coalesce.py); off: each read
# computes its own.
PROJECTS_LIST_COALESCE = env_bool("PROJECTS_LIST_COALESCE", True)


def database_from_url(url: str) -> dict:
    """`sqlite:///path` or `postgres://user:pass@host:port/name?opt=v` as a DATABASES entry."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute/path.db, as most tools spell them.
        path = unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
        name = path if path and path != ":memory:" else ":memory:"
        if name != ":memory:" and not os.path.isabs(name):
            name = str(BASE_DIR / name)
        return sqlite_database(name)
    if scheme in {"postgres", "postgresql", "pgsql"}:
        options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        # Bounds so that a database that is down or stalled costs a request seconds, not a
        # hang (flagadmin/core/db.py adds the client-side bound for a frozen server). Values set
        # in the URL's query win.
        options.setdefault("connect_timeout", str(DB_CONNECT_TIMEOUT))
        if DB_STATEMENT_TIMEOUT > 0 and "statement_timeout" not in options.get("options", ""):
            timeout_ms = round(DB_STATEMENT_TIMEOUT * 1000)
            options["options"] = " ".join(
                [options.get("options", ""), f"-c statement_timeout={timeout_ms}"]
            ).strip()
        # psycopg prepares only statements run with prepare=True below this threshold (Django's
        # own cursors bind on the client and never prepare); None turns preparing off.
        options["prepare_threshold"] = 2**31 - 1 if DB_PREPARED_STATEMENTS else None
        return {
            # Django's PostgreSQL backend with a health check that costs no round trip.
            "ENGINE": "flagadmin.serving.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            # Keep connections between requests; check them before reuse.
            "CONN_MAX_AGE": int(os.environ.get("DB_CONN_MAX_AGE", "60")),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(f"DATABASE_URL scheme {scheme!r} is not supported")


def sqlite_database(name: str) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": name,
        "OPTIONS": {
            # Writers queue for the lock instead of failing with "database is locked":
            # IMMEDIATE takes the write lock when a transaction starts (no upgrade deadlock),
            # WAL lets readers run beside one writer, and the timeout is how long a writer waits.
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
            ),
        },
    }


DEBUG = env_bool("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set unless DEBUG is on (scripts/serve writes one to .env)."
        )
    SECRET_KEY = "insecure-local-debug-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
# Base of every URL the service hands out about itself (SAML entity id, callback); never the
# request's Host header, which a client controls.
PUBLIC_BASE_URL = os.environ.get("PUBLIC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")

DATABASES = {
    # Set but empty (or blank) means unset, as for every other variable here (a compose file's
    # `DATABASE_URL=`, a CI matrix cell without a database).
    "default": database_from_url(
        os.environ.get("DATABASE_URL", "").strip() or "sqlite:///db.sqlite3"
    ),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# SQLite builds the search indexes without their covering columns (INCLUDE, for PostgreSQL's
# index-only scans), which is all it needs: its warning would greet every first run on SQLite.
SILENCED_SYSTEM_CHECKS = (
    ["models.W040"] if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" else []
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from here, not from a CDN
    # djangosaml2 is not an installed app: its template tags, which every template engine would
    # load, import pysaml2 (~45 MiB per process); its templates are found through DIRS below.
    "axes",  # sign-in throttling (flagadmin/core/signin.py)
    "flagadmin.core",  # label "flagadmin"
    "groups",
    "users",
    "projects",
    "definitions",  # context fields and strategy definitions: what rules name
    "features",
    "overview",  # above features and projects: their read side (docs/architecture.md)
    "client_api",
    "evaluation",  # above client_api: decides flags over its payload
    "frontend_api",
    "auth_saml",
]

MIDDLEWARE = [
    # Behind the production stack's nginx (a Unix socket: no peer address), the client's
    # address from X-Real-IP, before anything (sign-in throttling) reads it.
    "flagadmin.serving.client_address.ClientAddressFromLocalProxyMiddleware",
    # Then: the Host header is checked here once (probes answer whatever the Host; a refused
    # Host is one warning line, not Django's traceback).
    "flagadmin.api.middleware.HostHeaderMiddleware",
    # API paths matched as Unleash matches them (repeated and trailing slashes).
    "flagadmin.api.middleware.ApiPathMiddleware",
    # CORS for /api/frontend (browsers' preflights answered here, before any authentication),
    # and its flags answered from the worker's memory when it can (the rest goes on).
    "frontend_api.middleware.FrontendApiMiddleware",
    # SDKs' polls answered from the worker's memory when it can (the rest goes on).
    "client_api.middleware.ClientFeaturesFromMemoryMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's CSS/JS under gunicorn with DEBUG off (no separate web server needed).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "djangosaml2.middleware.SamlSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "flagadmin.urls"
WSGI_APPLICATION = "flagadmin.wsgi.application"
ASGI_APPLICATION = "flagadmin.asgi.application"
APPEND_SLASH = False

# The folder of djangosaml2's own templates (its views render them), found without importing it.
DJANGOSAML2_TEMPLATES = str(
    Path(importlib.util.find_spec("djangosaml2").submodule_search_locations[0]) / "templates"
)
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [DJANGOSAML2_TEMPLATES],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "auth_saml.context_processors.saml_sign_in",
            ],
        },
    },
]

AUTH_USER_MODEL = "flagadmin.User"
AUTHENTICATION_BACKENDS = [
    # First: refuses locked-out sign-ins before the next backends hash a password.
    "flagadmin.core.signin.SignInThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
    "auth_saml.backends.SamlBackend",  # SAML 2.0 sign-in at /auth/saml/ (auth_saml app)
]

# --- SAML 2.0 sign-in (djangosaml2) -----------------------------------------------------------
# Configured per request from the settings stored by POST /api/admin/auth/saml/settings; the
# SP's entity id and URLs come from PUBLIC_BASE_URL. Signature checks need the xmlsec1 program.
# The IdP posts back cross-site, so browsers need HTTPS (the SAML session cookie is SameSite=None).
SAML_CONFIG_LOADER = "auth_saml.config.config_loader"
SAML_XMLSEC_BINARY = os.environ.get("SAML_XMLSEC_BINARY") or None  # default: xmlsec1 on PATH
SAML_USE_NAME_ID_AS_USERNAME = True  # the NameID (an email address) identifies the user
SAML_DJANGO_USER_MAIN_ATTRIBUTE = "email"
SAML_DJANGO_USER_MAIN_ATTRIBUTE_LOOKUP = "__iexact"
SAML_ATTRIBUTE_MAPPING: dict = {}  # the backend reads names and groups itself
SAML_DEFAULT_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
SAML_CSP_HANDLER = ""  # no django-csp: set the Content-Security-Policy at the proxy
SAML_ALLOWED_HOSTS = [urlsplit(PUBLIC_BASE_URL).hostname or "localhost"]  # `next` redirects
SAML_IGNORE_LOGOUT_ERRORS = True  # a failed IdP logout still ends the local session
# Where sign-in lands without `next`: admins on the Django admin, everyone else on the API
# documentation, which works with the session (so does every /api/admin call).
LOGIN_REDIRECT_URL = "/docs/"
SAML_ADMIN_REDIRECT_URL = "/admin/"
LOGOUT_REDIRECT_URL = "/docs/"

# --- sign-in throttling (django-axes, flagadmin/core/signin.py; docs/sign-in.md) ---------------
# The Django admin's password form: after SIGNIN_FAILURE_LIMIT failures of one account from one
# address (SIGNIN_LOCKOUT_BY), 429 for SIGNIN_LOCKOUT_MINUTES. SAML responses are not counted.
AXES_ENABLED = env_bool("SIGNIN_THROTTLING", True)
AXES_FAILURE_LIMIT = int(os.environ.get("SIGNIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("SIGNIN_LOCKOUT_MINUTES", "15")))
# "username+ip_address": only the pair locks (one person behind a NAT locks out nobody else);
# "username,ip_address": either one does.
AXES_LOCKOUT_PARAMETERS = [
    item.split("+") if "+" in item else item
    for item in env_list("SIGNIN_LOCKOUT_BY", "username+ip_address")
]
AXES_WHITELIST_CALLABLE = "flagadmin.core.signin.not_a_password_attempt"
AXES_USERNAME_CALLABLE = "flagadmin.core.signin.username_for_lockout"
AXES_LOCKOUT_CALLABLE = "flagadmin.api.signin.lockout_response"
AXES_RESET_ON_SUCCESS = True
# Attempts during a lockout are refused without a write, and do not extend it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_DISABLE_ACCESS_LOG = True  # successful sign-ins are in last_login / seen_at already
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "SAMLResponse"]
# The client's address: REMOTE_ADDR, or behind SIGNIN_PROXY_COUNT reverse proxies, the address
# they append to X-Forwarded-For (never a value the client can set alone).
SIGNIN_PROXY_COUNT = int(os.environ.get("SIGNIN_PROXY_COUNT", "0"))
# Set by flagadmin.serving for the app server it starts behind its own nginx, which replaces any
# X-Real-IP a client sent (flagadmin/serving/client_address.py); not a setting for operators.
CLIENT_ADDRESS_FROM_LOCAL_PROXY = os.environ.get("FLAGADMIN_BEHIND_LOCAL_NGINX") == "1"
AXES_CLIENT_IP_CALLABLE = "flagadmin.serving.client_address.signin_client_address"
# The SAML callback: at most this many responses per minute from one address, per process
# (auth_saml/rate_limit.py); Unleash's variable for its /auth/saml limit, and its default.
SAML_CALLBACK_RATE_LIMIT_PER_MINUTE = int(
    os.environ.get("AUTHENTICATION_RATE_LIMIT_PER_MINUTE", "10")
)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
# WhiteNoise finds the files in the apps themselves, so the admin looks right on a fresh clone
# without `collectstatic`; files collected into STATIC_ROOT are served as well.
WHITENOISE_USE_FINDERS = True
# Files browsers ask for at the site's root (favicon.ico), served from here by WhiteNoise.
WHITENOISE_ROOT = BASE_DIR / "flagadmin" / "public"
# STATIC_ROOT exists only after `collectstatic`, which is optional here: no warning without it.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

# Unleash's body limit: 100 kB. Bigger bodies get 413 ContentTooLargeError.
MAX_REQUEST_BODY_BYTES = 100 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES

SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PUBLIC_BASE_URL.startswith("https://"))
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

REST_FRAMEWORK = {
    # The token class comes first so that a call without credentials is a 401, not a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "flagadmin.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["flagadmin.api.permissions.AdminApiPrincipal"],
    "DEFAULT_PARSER_CLASSES": ["flagadmin.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "flagadmin.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "COERCE_DECIMAL_TO_STRING": False,
    "DATETIME_FORMAT": "iso-8601",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "flagadmin admin API",
    "DESCRIPTION": (
        "The Unleash-compatible administration API of flagadmin. Every error answers "
        "`{id, name, message, details?}`. Authenticate with an API token in the "
        "`Authorization` header (a leading `Bearer ` is accepted). Request bodies need a "
        "`Content-Length` (a chunked body is refused with 411 LengthRequiredError)."
    ),
    "VERSION": "1.0.0",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/admin",
    "ENUM_NAME_OVERRIDES": {
        "ApiTokenTypeEnum": ["admin", "client", "frontend"],
        "ProjectApiTokenTypeEnum": ["client", "frontend"],
        "VariantPayloadTypeEnum": "features.validators.PAYLOAD_TYPES",
        "FeatureTypeEnum": "features.metadata_serializers.FEATURE_TYPES",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "flagadmin.api.schema.drop_request_suffix",
    ],
}

# API tokens from the environment, created at start-up if missing (idempotent).
INIT_ADMIN_API_TOKENS = env_list("INIT_ADMIN_API_TOKENS")
INIT_CLIENT_API_TOKENS = env_list("INIT_CLIENT_API_TOKENS")
# How often a token's last_used_at is written at most (seconds); never on every request.
TOKEN_LAST_USED_RESOLUTION = int(os.environ.get("TOKEN_LAST_USED_RESOLUTION", "300"))
# SDK metrics: a flag's last_seen_at is written only when it moves by this many seconds or more.
LAST_SEEN_RESOLUTION = int(os.environ.get("LAST_SEEN_RESOLUTION", "60"))
# GET /api/client/features: a worker reuses the body it serialized while no audit event was
# recorded since, and for at most this many seconds (which bounds what a change made outside
# the API, e.g. in SQL, takes to reach SDKs). docs/client-payload.md.
CLIENT_FEATURES_MAX_AGE = int(os.environ.get("CLIENT_FEATURES_MAX_AGE", "10"))
# Per-flag limits, Unleash 8.2's defaults and variable names (`features.limits`): strategies
# per flag environment, constraints per strategy, values per constraint, segments per strategy,
# values per segment (summed over its constraints), segments in all. At least 1 (constraints and
# segments: at least 0).
FEATURE_ENVIRONMENT_STRATEGIES_LIMIT = max(
    1, int(os.environ.get("UNLEASH_FEATURE_ENVIRONMENT_STRATEGIES_LIMIT", "30"))
)
CONSTRAINTS_LIMIT = max(0, int(os.environ.get("UNLEASH_CONSTRAINTS_LIMIT", "30")))
CONSTRAINT_VALUES_LIMIT = max(1, int(os.environ.get("UNLEASH_CONSTRAINT_VALUES_LIMIT", "250")))
STRATEGY_SEGMENTS_LIMIT = max(1, int(os.environ.get("UNLEASH_STRATEGY_SEGMENTS_LIMIT", "5")))
SEGMENT_VALUES_LIMIT = max(1, int(os.environ.get("UNLEASH_SEGMENT_VALUES_LIMIT", "1000")))
SEGMENTS_LIMIT = max(0, int(os.environ.get("UNLEASH_SEGMENTS_LIMIT", "300")))
# /api/client: a worker reuses a client token's lookup, and the revision read with it, for this
# many seconds (0: a query on every request), and a body read while writes were in flight (one
# of them may commit out of order) as long. So a commit reaches every worker within it (plus
# one build). SDKs poll every 15 s by default, so a second's delay is invisible to them and
# spares the database most of their requests.
CLIENT_API_REUSE_SECONDS = float(os.environ.get("CLIENT_API_REUSE_SECONDS", "1"))
# Requests a worker answers from its memory before Django's request handling, by path: each a
# factory of the function that answers (flagadmin/serving/answered_from_memory.py); {} to have
# Django handle them like any request.
ANSWERED_FROM_MEMORY = {
    "/api/frontend": "frontend_api.middleware.memory_answerer",
    "/api/client/features": "client_api.middleware.memory_answerer",
}
# /api/frontend: the origins whose pages may call it from a browser (CORS), as Unleash's
# frontend API origins: comma-separated `scheme://host[:port]`, or `*` (the default, as
# Unleash's) for any. An origin that is not one is refused at start-up.
FRONTEND_API_ORIGINS = env_list("UNLEASH_FRONTEND_API_ORIGINS", "*")
# Seconds a browser may keep a preflight's answer (Access-Control-Max-Age), as Unleash's.
ACCESS_CONTROL_MAX_AGE = int(os.environ.get("ACCESS_CONTROL_MAX_AGE", "86400"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {
        "not_503": {"()": "flagadmin.logfilters.SkipServiceUnavailable"},
        "redacted": {"()": "flagadmin.logfilters.RedactedSecrets"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redacted"]}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # 503s are logged once, in one line, by the error handler (flagadmin/api/errors.py).
        "django.request": {"level": "ERROR", "filters": ["not_503"]},
        "saml2": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # failures and lockouts; not its start-up banner
        # pysaml2's schema library logs "Resource 'XMLSchema.xsd' is already loaded" at INFO.
        "xmlschema": {"level": "WARNING"},
    },
}
