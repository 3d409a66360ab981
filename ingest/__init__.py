"""Ingest: a domain pack into the artifact linkage graph (schema, catalog, rules, verification)."""
