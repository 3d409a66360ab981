// Test helper: give one rule document another title (to show a hostile title is inert on a page).
MATCH (r:Rule {key: $key})
SET r.title = $title
