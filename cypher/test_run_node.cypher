// One Run node's properties (seed, phraser, judge, prompt and code versions).
MATCH (r:Run {key: $run})
RETURN properties(r) AS run
