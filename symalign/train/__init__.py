"""Recipes that train the model zoo."""
