"""mt.nn: losses."""

__all__ = []
