// Retire standard tasks and their variants (linked by VARIANT_OF, or named <key>:<variant> by
// write-back), with the reason and the update that retired them.
UNWIND $rows AS row
MATCH (t:Task {key: row.key})
OPTIONAL MATCH (x:Task)-[:VARIANT_OF]->(t)
WITH t, row, collect(x) AS linked
OPTIONAL MATCH (y:Task) WHERE y.key IN [t.key + ':oracle', t.key + ':no_rule']
WITH t, row, linked, collect(y) AS named
WITH t, row, linked + named AS variants
FOREACH (n IN [t] + variants | SET n.status = 'retired', n.retired_reason = row.reason, n.retired_by = row.update)
