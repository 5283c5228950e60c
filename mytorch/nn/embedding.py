"""mt.nn: embedding."""

__all__ = []
