"""The threefry-2x32 counter-based random-bit primitive."""

__all__ = []
