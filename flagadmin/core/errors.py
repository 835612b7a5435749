"""What a domain rule refuses, as plain exceptions: a kind and a message, and for input that
fails, which part of it and why. No HTTP here: the API layer (`flagadmin.api.errors`) gives
each kind its status and Unleash's error name, and frames the failing parts as paths of the
request it answers; the Django admin shows the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar


class ErrorKind(StrEnum):
    NOT_FOUND = "not found"
    NAME_EXISTS = "name exists"
    IN_USE = "in use"
    INVALID = "invalid"
    LIMIT_EXCEEDED = "limit exceeded"
    ARCHIVED = "archived"
    INVALID_OPERATION = "invalid operation"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input. `field`: where, as the keys from the input's root
    (`("segments",)`, `("roles", "0")`; `()` is the whole input), or None when no one part is
    to blame. `message`: a whole sentence; or, with `predicate`, what is wrong said of the field
    ("names no project"), which the caller frames with the field as its client named it, and
    with `refused` (the value refused) quoted after it."""

    message: str
    field: tuple[str, ...] | None = None
    predicate: bool = False
    refused: object = UNSET

    @classmethod
    def of(cls, field: Sequence[str], predicate: str, *, refused: object = UNSET) -> Problem:
        return cls(predicate, tuple(field), predicate=True, refused=refused)


class DomainError(Exception):
    """A refusal of a domain rule. Subclasses set `kind`, and a `default_message` when the
    rule always says the same."""

    kind: ClassVar[ErrorKind]
    default_message: ClassVar[str] = ""

    def __init__(self, message: str | None = None, *, problems: Sequence[Problem] = ()) -> None:
        self.message = message or self.default_message
        self.problems = tuple(problems)
        super().__init__(self.message)


class NotFoundError(DomainError):
    kind = ErrorKind.NOT_FOUND


class NameExistsError(DomainError):
    """The name (or id) is taken."""

    kind = ErrorKind.NAME_EXISTS


class InUseError(DomainError):
    """Cannot go while others use it (a segment that strategies of active flags use)."""

    kind = ErrorKind.IN_USE


class InvalidInputError(DomainError):
    """Input a rule refuses, naming each part that fails. Without a message, the message is
    the problems' sentences, one after the other."""

    kind = ErrorKind.INVALID

    def __init__(self, *problems: Problem, message: str | None = None) -> None:
        super().__init__(message, problems=problems)

    @classmethod
    def at(cls, field: Sequence[str], message: str) -> InvalidInputError:
        """One part fails; `message`, a whole sentence, says why."""
        return cls(Problem(message, tuple(field)), message=message)

    def __str__(self) -> str:
        return self.message or " ".join(problem.message for problem in self.problems)


class LimitExceededError(DomainError):
    """More of a resource than its configured limit (`features.limits`), as Unleash words it."""

    kind = ErrorKind.LIMIT_EXCEEDED

    def __init__(self, resource: str, limit: int) -> None:
        message = (
            f"Failed to create {resource}. You can't create more than the established limit "
            f"of {limit}."
        )
        super().__init__(message, problems=[Problem(message)])


class ArchivedError(DomainError):
    """A change Unleash refuses for an archived flag."""

    kind = ErrorKind.ARCHIVED
    default_message = "Cannot perform this operation on archived features"


class InvalidOperationError(DomainError):
    """A request that may not be carried out as it stands (e.g. deleting a flag that other
    flags depend on, archiving a project with active flags)."""

    kind = ErrorKind.INVALID_OPERATION
