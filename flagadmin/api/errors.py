"""The one place that builds error bodies: `{id, name, message, details?}` for every error.

Services raise the core's domain errors (`flagadmin.core.errors`), each of a kind that
`DOMAIN_ERRORS` maps to its status and Unleash's error name; the API layer raises the small
`ApiError` subclasses below (or DRF's and Django's own exceptions). `exception_handler` turns
anything into the contract's body, logs it with its id, and never lets SQL, stack traces or
secrets reach the client.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework import status
from rest_framework.response import Response
from rest_framework.settings import api_settings

from flagadmin.core.db import is_database_unavailable, outage_summary
from flagadmin.core.errors import UNSET, DomainError, ErrorKind, Problem

logger = logging.getLogger("flagadmin.errors")

REQUIRED_TEMPLATE = "The `{path}` property is required. It was not present on the data you sent."


class ApiError(drf.APIException):
    """An error with the contract's `name`. Subclasses set `status_code` and `error_name`."""

    status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
    error_name = "InternalError"
    default_detail = "Something went wrong on our side. The error id has been logged."

    def __init__(
        self,
        message: str | None = None,
        *,
        details: list[dict[str, str]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message or self.default_detail)
        self.message = str(message or self.default_detail)
        self.details = details
        self.extra = dict(extra or {})

    @classmethod
    def stated(cls, message: str | None = None) -> Self:
        """The error with its message repeated as its one `details` entry, without a path:
        Unleash's body for a refusal about no one property of the body (a header, the
        caller, the request as a whole)."""
        message = message or cls.default_detail
        return cls(message, details=[{"message": message}])


class ValidationError(ApiError):
    status_code = status.HTTP_400_BAD_REQUEST
    error_name = "ValidationError"
    default_detail = "The request does not conform to the schema."

    @classmethod
    def for_property(cls, path: str, message: str) -> ValidationError:
        """A 400 about one property; `message` is a whole sentence naming it."""
        return cls(message, details=[{"path": path, "message": message}])


class ExceedsLimitError(ApiError):
    """More of a resource than its configured limit (`features.limits`)."""

    status_code = status.HTTP_400_BAD_REQUEST
    error_name = "ExceedsLimitError"


class AuthenticationRequired(ApiError):
    status_code = status.HTTP_401_UNAUTHORIZED
    error_name = "AuthenticationRequired"
    default_detail = (
        "You must authenticate to use this API. Send an API token in the `Authorization` "
        "header (the whole header value is the token; a leading `Bearer ` is accepted)."
    )


class NoAccessError(ApiError):
    status_code = status.HTTP_403_FORBIDDEN
    error_name = "NoAccessError"

    def __init__(
        self,
        permission: str | None,
        environment: str | None = None,
        message: str | None = None,
        remark: str | None = None,
    ):
        """`permission` None: the operation needs no named permission, only another caller."""
        if permission is None:
            message = (
                message or "You don't have the required permissions to perform this operation."
            )
        text = message or (
            "You don't have the required permissions to perform this operation. To perform "
            f'this action, you need the "{permission}" permission'
            + (f' in the "{environment}" environment.' if environment else ".")
        )
        if remark:
            text = f"{text} {remark}"
        super().__init__(text, extra={"permissions": [permission] if permission else []})


class InvalidOperationError(ApiError):
    """A request that may not be carried out as it stands (Unleash's 403 of the same name),
    e.g. deleting a flag that other flags depend on."""

    status_code = status.HTTP_403_FORBIDDEN
    error_name = "InvalidOperationError"


class OperationDeniedError(InvalidOperationError):
    """Unleash's 403 for a change made through the wrong endpoint."""

    error_name = "OperationDeniedError"


class NotFoundError(ApiError):
    status_code = status.HTTP_404_NOT_FOUND
    error_name = "NotFoundError"
    default_detail = "The resource you asked for does not exist."


class ArchivedFeatureError(ApiError):
    """A change Unleash refuses for an archived flag (its 400 of the same name)."""

    status_code = status.HTTP_400_BAD_REQUEST
    error_name = "ArchivedFeatureError"
    default_detail = "Cannot perform this operation on archived features"


class MethodNotAllowedError(ApiError):
    status_code = status.HTTP_405_METHOD_NOT_ALLOWED
    error_name = "MethodNotAllowedError"


class NameExistsError(ApiError):
    status_code = status.HTTP_409_CONFLICT
    error_name = "NameExistsError"
    default_detail = "That name is already taken."


class SegmentInUseError(ApiError):
    """A segment that strategies of active flags use cannot be deleted (Unleash: a 409)."""

    status_code = status.HTTP_409_CONFLICT
    error_name = "SegmentInUseError"


class ConflictError(ApiError):
    """Unleash's 409 for a context field that flags' constraints still name (and this server's
    for a strategy type that flags' strategies are of)."""

    status_code = status.HTTP_409_CONFLICT
    error_name = "ConflictError"


class EndpointNotImplementedError(ApiError):
    """Paths of the Unleash Proxy that Unleash's Frontend API answers with 405 (raised
    `stated()`, as Unleash's body repeats the message)."""

    status_code = status.HTTP_405_METHOD_NOT_ALLOWED
    error_name = "NotImplementedError"
    default_detail = "The frontend API does not support this endpoint."


class ContentTooLargeError(ApiError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    error_name = "ContentTooLargeError"
    default_detail = "The request body is larger than the limit of 100 kB."


class LengthRequiredError(ApiError):
    status_code = status.HTTP_411_LENGTH_REQUIRED
    error_name = "LengthRequiredError"
    default_detail = (
        "Send the request body with a Content-Length header; chunked request bodies are not "
        "accepted."
    )


class TransferEncodingError(ApiError):
    """A body in a transfer coding the app cannot read (gzip, say), which Django would read as
    empty. nginx refuses it the same way before the app; gunicorn alone passes it on."""

    status_code = status.HTTP_501_NOT_IMPLEMENTED
    error_name = "ValidationError"
    default_detail = "This Transfer-Encoding is not supported: send the body with Content-Length."


class ContentTypeError(ApiError):
    status_code = status.HTTP_415_UNSUPPORTED_MEDIA_TYPE
    # Spelled exactly as the specification names it.
    error_name = "ContentTypeerror"

    def __init__(self, provided: str | None) -> None:
        shown = provided if provided else "you didn't provide one"
        super().__init__(
            f"We do not accept the content-type you provided ({shown}). Try using one of the "
            "content-types we do accept instead (application/json) and make sure the body is "
            "in the corresponding format."
        )


class TooManyRequestsError(ApiError):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    error_name = "TooManyRequestsError"
    default_detail = "Too many requests. Try again later."


class ServiceUnavailableError(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    error_name = "ServiceUnavailableError"
    default_detail = "The service is busy or its database is unreachable. Try again shortly."


class InternalError(ApiError):
    pass


# --- turning DRF validation trees into the contract's `details` ----------------------------


# Bounds that keep a 400 (and its log line) small whatever was sent, which a body of many bad
# values would otherwise multiply. At most MAX_DETAILS entries (the message says how many more),
# values quoted up to QUOTED_VALUE_LIMIT characters, paths and messages cut past their limits.
MAX_DETAILS = 20
QUOTED_VALUE_LIMIT = 300
PATH_LIMIT = 200
DETAIL_MESSAGE_LIMIT = 600
MESSAGE_LIMIT = (MAX_DETAILS + 1) * DETAIL_MESSAGE_LIMIT
SHORTENED = "… (shortened)"

# Properties whose values are never quoted back, whatever their type (they are secrets).
SECRET_PROPERTY_NAMES = frozenset({"spCertificate", "password", "secret"})


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + SHORTENED


def _quoted(value: Any) -> str:
    """The sent value as JSON, shortened: an error body must not echo a 90 kB field back."""
    if isinstance(value, list | dict) and len(value) > QUOTED_VALUE_LIMIT:
        # Only the start is shown: no need to serialise a huge structure to cut it.
        items = value if isinstance(value, list) else list(value.items())
        value = items[:QUOTED_VALUE_LIMIT] if isinstance(value, list) else dict(items[:10])
    return _shortened(json.dumps(value, ensure_ascii=False), QUOTED_VALUE_LIMIT)


def _value_at(data: Any, parts: list[str]) -> tuple[bool, Any]:
    for part in parts:
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return False, None
    return True, data


def _walk(tree: Any, parts: list[str]) -> Iterable[tuple[list[str], drf.ErrorDetail]]:
    if isinstance(tree, Mapping):
        for key, sub in tree.items():
            if key in ("non_field_errors", api_settings.NON_FIELD_ERRORS_KEY):
                yield from _walk(sub, parts)
            else:
                yield from _walk(sub, [*parts, str(key)])
    elif isinstance(tree, list):
        if all(isinstance(item, str) for item in tree):
            for item in tree:
                yield parts, item
        else:
            for index, sub in enumerate(tree):
                if sub:  # DRF puts {} at list positions without errors
                    yield from _walk(sub, [*parts, str(index)])
    else:
        yield parts, tree


def validation_details(tree: Any, data: Any, location: str = "body") -> list[dict[str, str]]:
    """One `{path, message}` per failure, at most MAX_DETAILS + 1 of them (the caller says how
    many more there were with `count_failures`); each message is a sentence that names the
    property, under `location` (`body`, or `query` for query parameters).

    Field messages are either whole sentences (starting with "The ") or predicates such as
    "must be boolean", which are framed as "The `/body/x` property must be boolean. You sent …".
    """
    details = []
    for parts, error in _walk(tree, []):
        if len(details) > MAX_DETAILS:
            break
        path = _shortened("/" + "/".join([location, *parts]), PATH_LIMIT)
        code = getattr(error, "code", None)
        text = str(error).rstrip(".")
        if code == "required":
            message = REQUIRED_TEMPLATE.format(path=path)
        elif text.startswith("The "):
            message = text + "."
        elif SECRET_PROPERTY_NAMES.intersection(parts):
            message = f"The `{path}` property {text}. Its value is not repeated."
        else:
            found, value = _value_at(data, parts)
            sent = f" You sent {_quoted(value)}." if found else ""
            message = f"The `{path}` property {text}.{sent}"
        details.append({"path": path, "message": _shortened(message, DETAIL_MESSAGE_LIMIT)})
    return details


def count_failures(tree: Any) -> int:
    return sum(1 for _ in _walk(tree, []))


def bounded_validation_error(tree: Any, data: Any, location: str = "body") -> ValidationError:
    """The 400 for a DRF error tree: the first MAX_DETAILS failures, and how many more."""
    details = validation_details(tree, data, location)
    if not details:
        return ValidationError()
    return _bounded(details, lambda: count_failures(tree))


def _bounded(details: list[dict[str, str]], total: Callable[[], int]) -> ValidationError:
    """The 400 listing `details` (at most MAX_DETAILS of them; `total()` counts them all when
    there are more), its message their sentences one after the other."""
    if len(details) > MAX_DETAILS:
        more = total() - MAX_DETAILS
        details = details[:MAX_DETAILS]
        shown = " ".join(d["message"] for d in details)
        noun = "problem" if more == 1 else "problems"
        message = f"{shown} And {more} more {noun} (only the first {MAX_DETAILS} are listed)."
        return ValidationError(message, details=details)
    return ValidationError(" ".join(d["message"] for d in details), details=details)


# --- the core's domain errors ----------------------------------------------------------------

# The status and Unleash's error name of each kind of domain error.
DOMAIN_ERRORS: dict[ErrorKind, type[ApiError]] = {
    ErrorKind.NOT_FOUND: NotFoundError,
    ErrorKind.NAME_EXISTS: NameExistsError,
    ErrorKind.IN_USE: SegmentInUseError,
    ErrorKind.INVALID: ValidationError,
    ErrorKind.LIMIT_EXCEEDED: ExceedsLimitError,
    ErrorKind.ARCHIVED: ArchivedFeatureError,
    ErrorKind.INVALID_OPERATION: InvalidOperationError,
}


def _problem_detail(problem: Problem, location: str = "body") -> dict[str, str]:
    """A domain error's `Problem` as a `details` entry, its field a path of the request
    (`/body/segments`); a predicate framed as a sentence that names that path."""
    if problem.field is None:
        return {"message": problem.message}
    path = "/" + "/".join([location, *problem.field])
    if not problem.predicate:
        return {"path": path, "message": problem.message}
    if problem.refused is UNSET:
        return {"path": path, "message": f"The `{path}` property {problem.message}."}
    # A value refused is quoted back, bounded, as `validation_details` quotes a field's.
    path = _shortened(path, PATH_LIMIT)
    message = f"The `{path}` property {problem.message}. You sent {_quoted(problem.refused)}."
    return {"path": path, "message": _shortened(message, DETAIL_MESSAGE_LIMIT)}


def from_domain(exc: DomainError) -> ApiError:
    """The API's error for a domain error: the status and name of its kind, its message (for
    invalid input without one, its problems' sentences), its problems as `details`."""
    api_error = DOMAIN_ERRORS[exc.kind]
    details = [_problem_detail(problem) for problem in exc.problems]
    if exc.kind == ErrorKind.INVALID and not exc.message:
        return _bounded(details, lambda: len(exc.problems))
    return api_error(exc.message, details=details or None)


def _request_data(context: Mapping[str, Any]) -> Any:
    request = context.get("request")
    try:
        return request.data if request is not None else None
    except Exception:  # the body itself was the problem (malformed JSON): nothing to quote
        return None


def _to_api_error(exc: Exception, context: Mapping[str, Any]) -> ApiError:
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, DomainError):
        return from_domain(exc)
    if isinstance(exc, drf.ValidationError):
        return bounded_validation_error(exc.detail, _request_data(context))
    if isinstance(exc, drf.ParseError):
        message = f"The request body is not valid JSON: {exc.detail}"
        return ValidationError.for_property("/body", message)
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return AuthenticationRequired()
    if isinstance(exc, drf.PermissionDenied) and str(exc.detail).startswith("CSRF Failed"):
        # A signed-in browser session that sent no CSRF token: no permission is missing.
        error = NoAccessError(
            "NONE",
            message=f"{exc.detail} Send the X-CSRFToken header with the session, or use an API "
            "token in the `Authorization` header.",
        )
        error.extra["permissions"] = []
        return error
    if isinstance(exc, drf.PermissionDenied | DjangoPermissionDenied):
        return NoAccessError("ADMIN")
    if isinstance(exc, drf.NotFound | Http404):
        return NotFoundError(str(exc) or None)
    if isinstance(exc, drf.MethodNotAllowed):
        request = context.get("request")
        method = request.method if request is not None else "This method"
        return MethodNotAllowedError(f"{method} is not allowed on this path.")
    if isinstance(exc, drf.UnsupportedMediaType):
        request = context.get("request")
        return ContentTypeError(request.content_type if request is not None else None)
    if isinstance(exc, drf.Throttled):
        return TooManyRequestsError()
    if is_database_unavailable(exc):
        # Down, frozen, timed out, or (SQLite) locked for the whole busy timeout: not a bug.
        return ServiceUnavailableError()
    if isinstance(exc, drf.APIException):
        error = ApiError(str(exc.detail))
        error.status_code = exc.status_code
        error.error_name = type(exc).__name__
        return error
    return InternalError()


def error_body(error: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "name": error.error_name,
        # Every message is bounded where it is built; this is the last guard of the size.
        "message": _shortened(error.message, MESSAGE_LIMIT),
    }
    if error.details:
        body["details"] = error.details
    body.update(error.extra)
    return body


def exception_handler(exc: Exception, context: Mapping[str, Any]):
    """DRF's EXCEPTION_HANDLER: every exception becomes the contract's error body."""

    error = _to_api_error(exc, context)
    body = error_body(error)
    if isinstance(error, ServiceUnavailableError):
        # A known outage: one line per request, no traceback (a 10 s outage under load must
        # not write megabytes of log).
        cause = exc if error is not exc else exc.__cause__
        logger.warning("error %s: %s (%s)", body["id"], error.error_name, _summary(cause))
    elif error.status_code >= 500:
        logger.error(
            "error %s: %s %s", body["id"], error.error_name, type(exc).__name__, exc_info=exc
        )
    else:
        logger.info("error %s: %s %s", body["id"], error.error_name, error.message)
    response = Response(body, status=error.status_code)
    if error.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = 'ApiKey realm="api", header="Authorization"'
    # Whatever failed, nothing of it may be committed by an enclosing atomic block.
    from rest_framework.views import set_rollback  # rest_framework.views imports this module

    set_rollback()
    return response


def _summary(cause: BaseException | None) -> str:
    return outage_summary(cause) if cause is not None else "no cause"


def json_error_response(error: ApiError, cause: BaseException | None = None) -> JsonResponse:
    """For the few places outside DRF views (Django handlers, middleware)."""
    body = error_body(error)
    if isinstance(error, ServiceUnavailableError):
        logger.warning("error %s: %s (%s)", body["id"], error.error_name, _summary(cause))
    elif error.status_code >= 500:
        logger.error("error %s: %s", body["id"], error.error_name)
    else:
        logger.info("error %s: %s %s", body["id"], error.error_name, error.message)
    # Compact, as DRF's renderer writes every other body.
    return JsonResponse(
        body, status=error.status_code, json_dumps_params={"separators": (",", ":")}
    )
