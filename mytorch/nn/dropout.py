"""mt.nn: dropout."""

__all__ = []
