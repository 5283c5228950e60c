"""Distributions built from uniform/normal draws: gamma, beta, dirichlet, multivariate_normal,
orthogonal."""

__all__ = []
