"""mt.nn: containers."""

__all__ = []
