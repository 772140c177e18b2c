"""The scheduling cycle (synchronous) and the binding cycle (asynchronous)."""
