"""Reliability tests: real processes, signals and hostile inputs, each bounded to seconds."""
