"""mt.nn: multihead."""

__all__ = []
