"""The tslog broker daemon and its storage engine."""
