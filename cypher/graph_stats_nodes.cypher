MATCH (n) WHERE $domain IS NULL OR n.domain = $domain
UNWIND labels(n) AS label
RETURN label, count(*) AS count ORDER BY label
