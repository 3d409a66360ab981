// Provenance of one catalog ingest. Private: no public routing tool reads CatalogSource.
MERGE (s:CatalogSource {key: $key})
SET s.catalog = $catalog, s.kind = $kind, s.root = $root, s.n_databases = $n_databases,
    s.skipped = $skipped, s.profiler = $profiler
