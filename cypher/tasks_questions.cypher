// The question, analysis type and gold of a domain's admitted tasks (of $keys when not null), with
// their metric's rounding, metric, dimension and facts: what the one-question-one-answer invariant
// reads (core/ambiguity.py).
MATCH (t:Task {domain: $domain})
WHERE t.status = 'admitted' AND ($keys IS NULL OR t.key IN $keys)
OPTIONAL MATCH (t)-[:ON_METRIC]->(m:Metric)
RETURN t.key AS key, t.question AS question, t.analysis_type AS analysis_type, t.gold_answer AS gold,
       coalesce(m.rounding, 2) AS rounding, t.metric_id AS metric_id, t.dimension AS dimension, t.facts AS facts
ORDER BY key
