// Tasks whose gold answer has an older meaning (GOLD_VERSION in generation/writeback.py: 1 = the
// skeleton's one rule, 2 = the metric's whole policy, 3 = exact rounding, no-rule variants that
// ask for the catalog's definition, knowledge facts that need the rule) are retired before the domain is generated
// again, so a domain never holds a mix; tasks regenerated under the same key are admitted anew.
MATCH (t:Task {domain: $domain})
WHERE t.status = 'admitted' AND coalesce(t.gold_version, 1) < $gold_version
SET t.status = 'retired', t.retired_reason = $reason, t.retired_by = $key
RETURN count(t) AS retired
