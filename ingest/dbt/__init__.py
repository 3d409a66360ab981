"""Import a dbt Semantic Layer (MetricFlow) `semantic_manifest.json` as a domain pack: semantic
models become tables, join keys and dimensions, measures and metrics become metric templates built
on sqlglot trees; what the pack format cannot express is reported per metric, never approximated."""
