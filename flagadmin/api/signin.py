"""The answer to a password sign-in refused by the lockout (`AXES_LOCKOUT_CALLABLE`): 429, with
the error body every API error has under /api/, and `flagadmin.core.signin`'s page elsewhere.
(The SAML callback has no lockout, only its rate limit: `auth_saml.rate_limit`.)"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from flagadmin.api.errors import TooManyRequestsError, json_error_response
from flagadmin.core import signin


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict | None = None,
) -> HttpResponse:
    message = signin.lockout_message(request)
    if request.path_info == "/api" or request.path_info.startswith("/api/"):
        response: HttpResponse = json_error_response(TooManyRequestsError(message))
    else:
        response = signin.lockout_page(request, message)
    seconds = signin.retry_after(request)
    if seconds is not None:
        response["Retry-After"] = seconds
    return response
