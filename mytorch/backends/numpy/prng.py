"""NumPy kernels of the threefry-2x32 random-bit primitive (mytorch/lax/prng.py)."""
