"""mt.nn: module."""

__all__ = []
