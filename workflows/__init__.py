"""Deterministic workflow code only: it decides, activities act."""
