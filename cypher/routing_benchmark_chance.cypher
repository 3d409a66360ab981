// The stored shortcut audit of one generated benchmark (null before any audit).
MATCH (b:RoutingBenchmark {catalog: $catalog, benchmark: $benchmark})
RETURN b.shortcut_audit AS audit
