// Every task of a domain (or of the graph) by variant and status: core/task_counts.py names them
// admitted standard tasks, with variants, with rejected candidates.
MATCH (t:Task) WHERE $domain IS NULL OR t.domain = $domain
RETURN t.variant AS variant, t.status AS status, count(*) AS n
