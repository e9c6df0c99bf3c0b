"""Every problem of an Instance in one message, bounded, instead of the first failing rule only.

A user who saved an Instance with two mistakes should read both on status (or in the answer of
`/validate`, or from `render`), not fix one, save, and meet the next. The rules still run in their
documented order and keep their exact texts; what changed is that a failing rule no longer stops
the rules that do not depend on it. `Problems` collects the texts in rule order; the message shows
at most MAX_PROBLEMS of them, each cut to MAX_PROBLEM_CHARS, joined by SEPARATOR, so a single
problem reads exactly as before and many fit in a condition message and in `kubectl get`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from actors import ValidationFailed

MAX_PROBLEMS: Final = 8
MAX_PROBLEM_CHARS: Final = 400
SEPARATOR: Final = " | "
_CUT: Final = " …"


def _bounded(message: str) -> str:
    if len(message) <= MAX_PROBLEM_CHARS:
        return message
    return message[: MAX_PROBLEM_CHARS - len(_CUT)] + _CUT


def joined(messages: Sequence[str]) -> str:
    """The one message that shows `messages`: the first MAX_PROBLEMS, each bounded, and how many
    more there are."""
    shown = SEPARATOR.join(_bounded(m) for m in messages[:MAX_PROBLEMS])
    hidden = len(messages) - MAX_PROBLEMS
    return f"{shown}{SEPARATOR}and {hidden} more" if hidden > 0 else shown


class InstanceProblems(ValidationFailed):
    """ValidationFailed for several problems at once: `message` shows them all (bounded),
    `messages` keeps each one."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = tuple(messages)
        super().__init__(joined(self.messages))


def problems_of(exc: ValidationFailed) -> tuple[str, ...]:
    return exc.messages if isinstance(exc, InstanceProblems) else (exc.message,)


class Problems:
    """The problems found so far, in rule order, each once."""

    def __init__(self) -> None:
        self._messages: list[str] = []

    def add(self, message: str) -> None:
        if message not in self._messages:
            self._messages.append(message)

    def extend(self, messages: Iterable[str]) -> None:
        for message in messages:
            self.add(message)

    @contextmanager
    def collect(self) -> Iterator[None]:
        """Run one rule (or a group of rules that stop at their first failure): its failure is
        recorded and the rules after it still run."""
        try:
            yield
        except ValidationFailed as exc:
            self.extend(problems_of(exc))

    def __bool__(self) -> bool:
        return bool(self._messages)

    def raise_any(self) -> None:
        """ValidationFailed showing every problem found, if there is one."""
        if len(self._messages) == 1:
            raise ValidationFailed(self._messages[0])
        if self._messages:
            raise InstanceProblems(self._messages)
