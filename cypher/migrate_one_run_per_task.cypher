// Graphs written before a task had one current run may link a task to several Runs:
// keep the edge to the latest run (by start time, then key), list the others in
// t.previous_runs, as a rewrite by a later run does (tasks_write.cypher).
MATCH (t:Task {domain: $domain})
WHERE COUNT { (t)-[:GENERATED_BY]->(:Run) } > 1
MATCH (t)-[e:GENERATED_BY]->(r:Run)
WITH t, e, r ORDER BY coalesce(r.started_at, '') DESC, r.key DESC
WITH t, collect({edge: e, run: r.key}) AS links
FOREACH (old IN tail(links) | DELETE old.edge)
SET t.previous_runs = reduce(acc = coalesce(t.previous_runs, []), k IN [l IN tail(links) | l.run] |
                             CASE WHEN k IN acc THEN acc ELSE acc + k END)
RETURN count(t) AS relinked
