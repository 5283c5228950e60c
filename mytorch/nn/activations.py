"""mt.nn: activations."""

__all__ = []
