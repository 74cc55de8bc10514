"""convlab: a research toolkit for conversational memory."""

__version__ = "0.1.0"
