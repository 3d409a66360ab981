// The shortcut audit of one generated benchmark (chance levels: no private value), as JSON.
MATCH (b:RoutingBenchmark {catalog: $catalog, benchmark: $benchmark})
SET b.shortcut_audit = $audit
