"""Turning roots into index rows: preparation, incremental runs, the index manifest."""
