// Admitted standard tasks of a domain that this run did not generate (earlier runs' tasks it did
// not regenerate): eval and mcp serve them beside the run's own unless given --run; export selects them.
MATCH (t:Task {domain: $domain, status: 'admitted', variant: 'standard'})
WHERE NOT EXISTS { (t)-[:GENERATED_BY]->(:Run {key: $run}) }
RETURN count(t) AS n
