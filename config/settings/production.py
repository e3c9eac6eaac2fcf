"""Production settings: the base settings with DEBUG off and HTTPS hardening on.

``SECRET_KEY`` and ``ALLOWED_HOSTS`` must come from the environment.
"""
import os

os.environ.setdefault("DEBUG", "false")

from .base import *  # noqa: E402,F403
from .base import env_bool  # noqa: E402

DEBUG = False
if len(os.environ.get("SECRET_KEY", "")) < 50:  # not the embedded default's generated one: the operator's
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("SECRET_KEY must be at least 50 random characters in production")

STORAGES["staticfiles"]["BACKEND"] = "whitenoise.storage.CompressedManifestStaticFilesStorage"  # noqa: F405
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz/", r"^metrics/$"]
# X-Forwarded-Proto says a request came over HTTPS only where the operator declared the proxy that
# sets it (LOGIN_PROXY_COUNT): without one, any client could send it and pass for a secure request.
if AXES_IPWARE_PROXY_COUNT:  # noqa: F405
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
