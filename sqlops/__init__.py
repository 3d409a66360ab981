"""SQL on the syntax tree: parsing, rendering with bound parameters, and the rule operations.

Shared by ingest (counterfactual verification), generation (grounding) and the knowledge
service (incremental update). Each operation is a pure `tree -> tree` function on a copy.
"""
