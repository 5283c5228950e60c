"""mt.nn: conv."""

__all__ = []
