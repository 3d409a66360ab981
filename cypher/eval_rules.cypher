// The rule documents of a domain with the effects of their current version.
MATCH (r:Rule {domain: $domain})
OPTIONAL MATCH (r)-[:CURRENT_VERSION]->(v:RuleVersion)
RETURN r {.*} AS rule, v.effects_json AS effects_json
ORDER BY r.id
