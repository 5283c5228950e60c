"""Backends: NumPy (CPU) and, where available, CuPy (GPU). Each registers itself in core."""
