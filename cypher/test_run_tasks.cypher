// Every task a run generated (any status or variant), with the keys of what it links to: the
// generation tests check provenance and duplicates from this.
MATCH (t:Task)-[:GENERATED_BY]->(:Run {key: $run})
RETURN t.key AS key, properties(t) AS props,
       COLLECT { MATCH (t)-[:FROM_SKELETON]->(x:Skeleton) RETURN x.key } AS skeletons,
       COLLECT { MATCH (t)-[:ON_METRIC]->(x:Metric) RETURN x.key } AS metrics,
       COLLECT { MATCH (t)-[:ON_DIMENSION]->(x:Dimension) RETURN x.key } AS dimensions,
       COLLECT { MATCH (t)-[:READS]->(x:Table) RETURN x.key } AS tables,
       COLLECT { MATCH (t)-[u:USES_RULE]->(x:Rule) RETURN {key: x.key, version: u.version} } AS rules,
       COLLECT { MATCH (t)-[:USES_RULE_VERSION]->(x:RuleVersion) RETURN x.key } AS rule_versions,
       COLLECT { MATCH (t)-[:GENERATED_BY]->(x:Run) RETURN x.key } AS runs,
       COLLECT { MATCH (t)-[:VARIANT_OF]->(x:Task) RETURN x.key } AS variant_of
ORDER BY key
