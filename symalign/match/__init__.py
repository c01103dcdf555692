"""Matchers: find the symmetry transform that brings model B into model A's basis."""
