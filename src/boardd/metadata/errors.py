"""ML Metadata's exception classes, codes and hierarchy (``ml_metadata.errors``), for boardd.

A script that catches ``ml_metadata.errors.NotFoundError`` catches ours after its import line
changes. Codes are the canonical status codes MLMD (and gRPC) use.
"""

from __future__ import annotations

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class StatusError(Exception):
    """Base of every lineage-store error: a message and a status code."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code


class CancelledError(StatusError):
    """The operation was cancelled."""

    def __init__(self, message: str) -> None:
        super().__init__(message, CANCELLED)


class UnknownError(StatusError):
    """The operation failed for an unknown reason."""

    def __init__(self, message: str, error_code: int = UNKNOWN) -> None:
        super().__init__(message, error_code)


class InvalidArgumentError(StatusError):
    """An argument is invalid (a missing type id, a property of the wrong type, …)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, INVALID_ARGUMENT)


class DeadlineExceededError(StatusError):
    """A deadline expired before the operation completed."""

    def __init__(self, message: str) -> None:
        super().__init__(message, DEADLINE_EXCEEDED)


class NotFoundError(StatusError):
    """A requested record does not exist."""

    def __init__(self, message: str) -> None:
        super().__init__(message, NOT_FOUND)


class AlreadyExistsError(StatusError):
    """A record to create exists already (same name, external id, or an incompatible type)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ALREADY_EXISTS)


class PermissionDeniedError(StatusError):
    """The caller may not run the operation (e.g. a write on a read-only store)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, PERMISSION_DENIED)


class UnauthenticatedError(StatusError):
    """The request has no valid credentials."""

    def __init__(self, message: str) -> None:
        super().__init__(message, UNAUTHENTICATED)


class ResourceExhaustedError(StatusError):
    """A resource ran out."""

    def __init__(self, message: str) -> None:
        super().__init__(message, RESOURCE_EXHAUSTED)


class FailedPreconditionError(StatusError):
    """The store is not in a state to run the operation (e.g. a newer schema)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, FAILED_PRECONDITION)


class AbortedError(StatusError):
    """The operation was aborted, typically by a concurrent writer; retrying may succeed."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ABORTED)


class OutOfRangeError(StatusError):
    """An index is outside its range (e.g. an event edge's artifact_index)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, OUT_OF_RANGE)


class UnimplementedError(StatusError):
    """The operation is not implemented (e.g. changing a type's base_type)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, UNIMPLEMENTED)


class InternalError(StatusError):
    """An internal invariant broke."""

    def __init__(self, message: str) -> None:
        super().__init__(message, INTERNAL)


class UnavailableError(StatusError):
    """The store cannot be reached (e.g. the file is locked or missing)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, UNAVAILABLE)


class DataLossError(StatusError):
    """Data was lost or corrupted."""

    def __init__(self, message: str) -> None:
        super().__init__(message, DATA_LOSS)


_CODE_TO_CLASS: dict[int, type[StatusError]] = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    UNAUTHENTICATED: UnauthenticatedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
}


def exception_type_from_error_code(error_code: int) -> type[StatusError]:
    """The exception class of a status code (KeyError for a code it does not know, as
    ML Metadata's)."""
    return _CODE_TO_CLASS[error_code]


def make_exception(message: str, error_code: int) -> StatusError:
    """An exception of the class the status code maps to (UnknownError for a code it does
    not know)."""
    cls = _CODE_TO_CLASS.get(error_code, UnknownError)
    if cls is UnknownError:
        return UnknownError(message, error_code)
    return cls(message)  # type: ignore[call-arg]
