// A rule document that is back (or still there) after an update is no longer marked removed.
MATCH (r:Rule {key: $rule})
WHERE r.removed IS NOT NULL
SET r.removed = null, r.removed_by = null
