"""mt.nn: attention."""

__all__ = []
