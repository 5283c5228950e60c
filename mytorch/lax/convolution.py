"""Primitives (being written)."""

__all__ = []
