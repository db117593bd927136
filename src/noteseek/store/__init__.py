"""Storage: the protocols by role (``base``), the backends that implement them (``sqlite``), the
in-process vector index for backends that store raw vectors (``ann``), and ``factory``, which
opens a backend by name."""
