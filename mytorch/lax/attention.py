"""Scaled dot-product attention as primitives."""

__all__ = []
