"""The CuPy (CUDA) backend's lowerings. Only the elementwise expressions exist so far
(expressions.py, importable without CuPy); the backend that runs them comes later."""
