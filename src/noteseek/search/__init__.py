"""Retrievers and the query pipeline."""
