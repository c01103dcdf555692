"""Symmetry: the spec of which groups act where (spec), the groups (groups), one generic apply (transform)."""
