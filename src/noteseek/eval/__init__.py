"""Measuring ranking quality: datasets in BEIR form, metrics, a runner."""
