// Private: the id mapping of one generated benchmark (execution and scoring only).
MATCH (b:RoutingBenchmark {catalog: $catalog, benchmark: $benchmark})
RETURN b.public_ids AS public_ids, b.catalog_ids AS catalog_ids
