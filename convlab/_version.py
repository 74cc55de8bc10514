"""The package version, in one place: ``convlab.__version__`` and what stores and runs record."""

__version__ = "0.1.0"
