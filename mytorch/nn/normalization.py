"""mt.nn: normalization."""

__all__ = []
