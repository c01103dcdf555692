"""symalign: loss barriers between trained transformers once parameter symmetries are factored out."""

__version__ = "0.1.0"
