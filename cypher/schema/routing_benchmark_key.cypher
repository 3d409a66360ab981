CREATE CONSTRAINT routing_benchmark_key IF NOT EXISTS FOR (n:RoutingBenchmark) REQUIRE n.key IS UNIQUE
