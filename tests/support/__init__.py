"""Shared test helpers: object builders, waiting with deadlines, API clients."""
