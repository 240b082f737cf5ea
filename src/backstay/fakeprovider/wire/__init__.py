"""The wire formats the fake provider speaks: one module per API, sharing ``base``."""
