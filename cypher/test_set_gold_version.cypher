// Test helper: set (or remove, with null) the gold_version of every task of a domain.
MATCH (t:Task {domain: $domain})
SET t.gold_version = $version
