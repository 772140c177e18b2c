"""Runs the plugins of each extension point with upstream semantics."""
