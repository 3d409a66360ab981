// The content hash of every metric of a domain (what ingest_metrics writes), compared before and
// after an ingest: a metric whose definition changed has its tasks re-derived.
MATCH (m:Metric {domain: $domain})
RETURN m.id AS id, m.hash AS hash
