"""Turn pydantic validation errors into the one-line, field-named messages users see on status."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


def error_message(prefix: str, err: ErrorDetails | dict[str, Any]) -> str:
    """`<prefix>.<field path>: <reason>` for one error, e.g.
    `llmEngine.parameters.tensorParallelSize: Input should be a valid integer`."""
    path = ".".join(str(p) for p in err["loc"] if p != "__root__")
    where = f"{prefix}.{path}" if path and prefix else (path or prefix)
    # pydantic prefixes messages of custom validators with "Value error, "; drop that noise.
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def error_messages(prefix: str, errors: ValidationError | Sequence[ErrorDetails]) -> list[str]:
    """One message per error, in pydantic's order (the order of the fields)."""
    details = errors.errors(include_url=False) if isinstance(errors, ValidationError) else errors
    return [error_message(prefix, err) for err in details]


def first_error_message(prefix: str, exc: ValidationError) -> str:
    """The message of the first error only: for what is read before an Instance's own rules (the
    chart's catalogs, settings), where one problem at a time is enough."""
    return error_message(prefix, exc.errors(include_url=False)[0])
