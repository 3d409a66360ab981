MATCH (r:Rule {id: $id}) WHERE $domain IS NULL OR r.domain = $domain
RETURN r.key AS key, r.domain AS domain ORDER BY r.domain
