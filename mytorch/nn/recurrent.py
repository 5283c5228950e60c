"""mt.nn: recurrent."""

__all__ = []
