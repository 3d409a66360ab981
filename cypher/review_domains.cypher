// The domains with admitted tasks, and how many: the review app's first page.
MATCH (t:Task {status: 'admitted'})
RETURN t.domain AS domain, count(t) AS tasks
ORDER BY domain
