"""mt.nn: linear."""

__all__ = []
