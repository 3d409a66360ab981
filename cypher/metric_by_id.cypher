MATCH (m:Metric {id: $id}) WHERE $domain IS NULL OR m.domain = $domain
RETURN m.key AS key, m.domain AS domain ORDER BY m.domain
