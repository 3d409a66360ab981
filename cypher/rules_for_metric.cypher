MATCH (m:Metric {key: $metric})
CALL (m) {
  MATCH (r:Rule)-[e:MODIFIES]->(m)
  RETURN r, e, [m.id] AS path
  UNION
  MATCH p = (m)-[:USES*1..6]->(c:Metric)<-[e:MODIFIES]-(r:Rule)
  RETURN r, e, [n IN nodes(p) WHERE n:Metric | n.id] AS path
}
OPTIONAL MATCH (r)-[a:APPLIES_WHEN]->(d:Dimension)
OPTIONAL MATCH (r)-[:CURRENT_VERSION]->(v:RuleVersion)
RETURN r.id AS rule_id, r.title AS title, r.rule_type AS rule_type, v.version AS version, v.hash AS content_hash,
       e.op AS op, e.verified AS verified, e.changed_slices AS changed_slices, path,
       collect(DISTINCT CASE WHEN d IS NULL THEN NULL ELSE {dimension: d.column, value: a.value} END) AS applies_when
ORDER BY size(path), rule_id
