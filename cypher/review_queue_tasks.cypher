// The admitted tasks of a domain as a review queue needs them: key, strata and current version.
MATCH (t:Task {domain: $domain, status: 'admitted'})
WHERE $variants IS NULL OR t.variant IN $variants
RETURN t.key AS key, t.tier AS tier, t.analysis_type AS analysis_type, coalesce(t.version, 1) AS version
ORDER BY t.key
