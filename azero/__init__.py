"""azero: an AlphaZero-style trainer for board games (batched games, batched array search, batched network)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
