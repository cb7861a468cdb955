"""Admin APIs as typed services both ports call."""
