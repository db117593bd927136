"""Reliability: real processes, signals, damaged files and hostile inputs."""
