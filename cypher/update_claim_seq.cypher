// First statement of every update transaction: bump the domain's update sequence if it is still
// the one the plan was computed against (else no row: the caller re-plans). Taking this write
// lock first also serialises concurrent updates of one domain.
MATCH (d:Domain {name: $domain})
WHERE coalesce(d.update_seq, 0) = $expected
SET d.update_seq = $expected + 1
RETURN d.update_seq AS seq
