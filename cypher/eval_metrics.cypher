// The metric catalog of a domain, for the knowledge base and the pairing ablation.
MATCH (m:Metric {domain: $domain})
RETURN m {.*} AS metric
ORDER BY m.id
