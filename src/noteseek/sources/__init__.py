"""Where documents come from: one :class:`~noteseek.sources.base.Source` per root, chosen by the
root's ``kind`` in ``registry.py``; ``files.py`` is the files under a folder."""
