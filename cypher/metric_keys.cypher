MATCH (m:Metric {key: $metric}) RETURN m.key AS key, m.id AS id, m.domain AS domain
