"""tilegate: a CI performance-regression gate for Triton kernels."""

__version__ = "0.1.0"
