// Tier and metric rounding of the tasks a drift --apply versions (is a rule task still one?).
UNWIND $keys AS k
MATCH (t:Task {key: k})
OPTIONAL MATCH (t)-[:ON_METRIC]->(m:Metric)
RETURN t.key AS key, t.tier AS tier, m.rounding AS rounding
