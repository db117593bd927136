"""Reliability tests: real processes, signals, damaged files and hostile inputs, each bounded
to seconds."""
