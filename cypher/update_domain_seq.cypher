// The update sequence of one domain (0 before its first incremental update).
OPTIONAL MATCH (d:Domain {name: $domain})
RETURN coalesce(d.update_seq, 0) AS seq
