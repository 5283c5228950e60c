"""NumPy kernels of the attention primitives (mytorch/lax/attention.py)."""
