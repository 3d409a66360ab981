// One contract per RoutingTask, linked to the databases it requires and the units it uses.
UNWIND $rows AS row
MERGE (t:RoutingTask {key: row.key})
SET t.catalog = row.catalog, t.task_id = row.task_id, t.behaviour = row.behaviour, t.request = row.request,
    t.renderer = row.renderer, t.seed = row.seed, t.contract = row.contract, t.required = row.required
WITH t, row
CALL (t, row) {
  UNWIND row.required AS pid
  MATCH (d:CatalogDatabase {public_id: pid})
  MERGE (t)-[:RoutingRequires]->(d)
}
CALL (t, row) {
  UNWIND row.units AS ukey
  MATCH (u:RoutingUnit {key: ukey})
  MERGE (t)-[:RoutingUsesUnit]->(u)
}
