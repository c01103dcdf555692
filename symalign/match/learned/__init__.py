"""Learned and soft matching (Theus et al.): transforms optimised for low loss between the models."""
