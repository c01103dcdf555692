"""Activation matching (Verma & Elbayad): spaces matched by how their units fire on data."""
