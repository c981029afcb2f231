"""Deliberately broken servers that show a classic mistake; never benchmarked."""
