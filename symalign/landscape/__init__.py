"""Loss landscapes between models: interpolation curves and barriers."""
