"""NumPy kernels (being written)."""
