"""Errors a user can cause. The CLI and the app turn these into one clear line, never a traceback."""


class SymalignError(Exception):
    """Base class for user-facing errors: the message is the whole story."""


class ModelLoadError(SymalignError):
    """A path that is not a loadable, supported Hugging Face model directory."""


class InadmissibleError(SymalignError):
    """A symmetry class the architecture (or its current form) does not admit."""


class ArchitectureMismatchError(SymalignError):
    """Two models that cannot be compared parameter by parameter."""


def require_at_least(flag: str, value: float | None, minimum: float) -> None:
    """One line for a value below its minimum, before it reaches arithmetic that would fail far from the cause
    (0 evaluation examples divided a loss by zero). None is the caller's default and passes."""
    if value is not None and not value >= minimum:  # NaN is below every minimum too
        raise SymalignError(f"{flag} must be at least {minimum:g}; got {value}")


def os_error_line(exc: OSError) -> str:
    """The machine's refusal (a full disk, a folder that cannot be made, a permission) in its own words,
    with the path it was about: what the command line and the app both say for an OSError."""
    return f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"


def brief(exc: BaseException, limit: int = 200) -> str:
    """One line from a library's exception: the line that names the cause, else the first."""
    if isinstance(exc, KeyError) and exc.args:  # str() of a KeyError is the bare key: "'added_tokens'"
        return f"no {exc.args[0]!r} entry"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    cause = next((line for line in lines if "Unsupported global" in line), lines[0] if lines else type(exc).__name__)
    return cause if len(cause) <= limit else cause[: limit - 1] + "…"
