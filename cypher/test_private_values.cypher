// Test helper: every property of every node and edge near one domain (its nodes, the nodes
// linked to them), as (kind, type, property, value) rows; the public surface test picks the
// private ones to attack.
MATCH (n) WHERE n.domain = $domain OR n.key = 'domain:' + $domain
CALL (n) { UNWIND labels(n) AS label UNWIND keys(n) AS prop
           RETURN 'node' AS kind, label AS type, prop, n[prop] AS value
           UNION
           MATCH (n)-[e]->() UNWIND keys(e) AS prop
           RETURN 'edge' AS kind, type(e) AS type, prop, e[prop] AS value }
RETURN DISTINCT kind, type, prop, value
