// Source units (with their gold SQL): private to generation and scoring, never read by routers.
// Each links to its database and to the catalog tables its gold SQL reads.
UNWIND $rows AS row
MERGE (u:RoutingUnit {key: row.key})
SET u.catalog = row.catalog, u.unit_id = row.unit_id, u.database = row.database, u.origin = row.origin,
    u.status = row.status, u.intent = row.intent, u.intent_source = row.intent_source, u.sql = row.sql,
    u.ordered = row.ordered, u.fingerprint = row.fingerprint, u.n_rows = row.n_rows, u.error = row.error,
    u.columns = row.columns, u.tables = row.tables
WITH u, row
OPTIONAL MATCH (d:CatalogDatabase {public_id: row.database})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | MERGE (u)-[:RoutingOwnedBy]->(d))
WITH u, d, [t IN coalesce(row.tables, []) | toLower(t)] AS reads
CALL (u, d, reads) {
  MATCH (d)-[:CatalogHasTable]->(ct:CatalogTable)
  WHERE toLower(ct.name) IN reads
  MERGE (u)-[:RoutingReadsTable]->(ct)
}
