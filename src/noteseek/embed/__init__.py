"""Embedders: text to unit-length vectors, behind one protocol (see base.py)."""
