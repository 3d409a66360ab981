// A standard task written again keeps only the variants written with it: an admitted variant of
// it that the new rows do not carry (its tier no longer has one, or the task was rejected) is
// retired, so no variant outlives its twin's rule versions. One row per standard task written:
// {standard, variants: [keys written], reason, by}.
UNWIND $rows AS row
MATCH (s:Task {key: row.standard})
OPTIONAL MATCH (x:Task)-[:VARIANT_OF]->(s)
WITH s, row, collect(x) AS linked
OPTIONAL MATCH (y:Task) WHERE y.key IN [s.key + ':oracle', s.key + ':no_rule']
WITH row, linked, collect(y) AS named
WITH row, [v IN linked + named WHERE v.status = 'admitted' AND NOT v.key IN row.variants] AS stale
UNWIND stale AS v
SET v.status = 'retired', v.retired_reason = row.reason, v.retired_by = row.by
