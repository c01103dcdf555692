"""Errors a user can cause. The CLI and the app turn these into one clear line, never a traceback."""


class SymalignError(Exception):
    """Base class for user-facing errors: the message is the whole story."""


class ModelLoadError(SymalignError):
    """A path that is not a loadable, supported Hugging Face model directory."""


class InadmissibleError(SymalignError):
    """A symmetry class the architecture (or its current form) does not admit."""


class ArchitectureMismatchError(SymalignError):
    """Two models that cannot be compared parameter by parameter."""
