"""Turn pydantic validation errors into the one-line, field-named messages users see on status."""

from __future__ import annotations

from pydantic import ValidationError


def first_error_message(prefix: str, exc: ValidationError) -> str:
    """`<prefix>.<field path>: <reason>` for the first error, e.g.
    `llmEngine.parameters.tensorParallelSize: Input should be a valid integer`.

    The first error only, so the message is stable and short enough for `kubectl get`; users fix
    one thing at a time exactly as with the Go provider's first-failing-rule messages.
    """
    err = exc.errors(include_url=False)[0]
    path = ".".join(str(p) for p in err["loc"] if p != "__root__")
    where = f"{prefix}.{path}" if path and prefix else (path or prefix)
    message = err["msg"]
    # pydantic prefixes messages of custom validators with "Value error, "; drop that noise.
    message = message.removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
