// The schema and update sequence of one domain: what a drift check fingerprints and the
// sequence its write expects (an update-rule or another drift --apply in between re-plans).
MATCH (d:Domain {name: $domain})
RETURN d.schema AS schema, coalesce(d.update_seq, 0) AS seq
