// Candidate metrics for extracting a rule document's effects (ingest/extract.py), found through
// the metric -> table edges (and the columns each edge lists): per metric, whether the document
// names it ($text: the document in lower case, holding its id or name), how many of the tables
// and columns the document names ($names) it reads, and its words for the caller's lexical
// similarity (the last criterion). Derived metrics are left out: a rule changes them through
// their inputs.
MATCH (m:Metric {domain: $domain})
WHERE NOT coalesce(m.derived, false)
OPTIONAL MATCH (m)-[r:READS]->(t:Table)
WITH m, collect(t.name) + reduce(cols = [], c IN collect(coalesce(r.columns, [])) | cols + c) AS read
WITH m, reduce(seen = [], x IN read | CASE WHEN x IN seen THEN seen ELSE seen + x END) AS read
RETURN m.id AS id,
       CASE WHEN $text CONTAINS toLower(m.id) OR $text CONTAINS toLower(m.name) THEN 1 ELSE 0 END AS named,
       size([x IN read WHERE x IN $names]) AS reads,
       m.name + ' ' + coalesce(m.description, '') + ' ' + coalesce(m.formula, '') AS words
ORDER BY named DESC, reads DESC, id
