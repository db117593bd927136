"""The link graph: resolution of links to documents, typed edges, neighbours."""
