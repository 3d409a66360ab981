// Private: one generated benchmark's id mapping (its public database ids -> the catalog's own ids).
// Read only by routing_benchmark_mapping (execution and scoring); never by a public read.
MERGE (b:RoutingBenchmark {key: $key})
SET b.catalog = $catalog, b.benchmark = $benchmark, b.public_ids = $public_ids, b.catalog_ids = $catalog_ids
