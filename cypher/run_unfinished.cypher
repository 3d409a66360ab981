// Runs of one domain, seed and target that `dibench generate` did not finish (the Runs of rule
// updates excluded): the candidates to resume, newest first. A run counts as unfinished while
// it has a driver or a plan not done (runs written before drivers were recorded have neither
// once complete).
MATCH (r:Run {domain: $domain, seed: $seed, target: $target})
WHERE r.finished_at IS NULL AND r.update_of IS NULL
  AND (r.driver IS NOT NULL OR EXISTS { MATCH (r)-[p:PLANS]->() WHERE p.state <> 'done' })
RETURN r.key AS key, r.driver AS driver, r.heartbeat_until AS heartbeat_until
ORDER BY r.started_at DESC, r.key DESC
