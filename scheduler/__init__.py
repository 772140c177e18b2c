"""The scheduler engine: informers, cache, queue, framework runtime and cycles.

Knows no particular plugin; see ARCHITECTURE.md for the layers.
"""
