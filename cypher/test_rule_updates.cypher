// The RuleUpdate records of one rule (the test suite reads what an update recorded).
MATCH (r:Rule {key: $rule})-[:HAS_UPDATE]->(u:RuleUpdate)
RETURN properties(u) AS update
ORDER BY u.seq
