// A deleted rule document: its edges go (MODIFIES, APPLIES_WHEN, MENTIONS, CURRENT_VERSION); the Rule node,
// its versions (HAS_VERSION) and the tasks' provenance edges stay, so history remains readable.
MATCH (r:Rule {key: $rule})
OPTIONAL MATCH (r)-[e:MODIFIES|APPLIES_WHEN|MENTIONS|CURRENT_VERSION]->()
DELETE e
WITH DISTINCT r
SET r.removed = true, r.removed_by = $update
