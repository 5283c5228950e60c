"""mt.nn: pooling."""

__all__ = []
