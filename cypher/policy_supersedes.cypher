// Which rule supersedes which, for the current rules of a domain.
MATCH (r:Rule {domain: $domain})
WHERE r.removed IS NULL AND r.supersedes IS NOT NULL
RETURN r.id AS rule_id, r.supersedes AS supersedes
ORDER BY rule_id
