"""Second product line: multi-database source routing.

Stages, one module each, in pipeline order:

catalog (profile one database) -> relations (cross-database links) -> catalog_store (Neo4j)
-> units (gold SQL to executed source units) -> builders/* (contracts per behaviour)
-> validate (deterministic checks) -> render (request wording) -> task_store (Neo4j, JSONL)
-> environment (what a router may see) -> routers/* -> execution + scoring -> report.
"""
