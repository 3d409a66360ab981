// After a re-ingest removed databases: drop the source units they owned, and retire the routing
// tasks that require a database the catalog no longer holds (kept, with the reason, never evaluated).
OPTIONAL MATCH (u:RoutingUnit {catalog: $catalog})
WHERE NOT EXISTS { MATCH (d:CatalogDatabase {catalog: $catalog, public_id: u.database}) }
WITH collect(u) AS gone
FOREACH (u IN gone | DETACH DELETE u)
WITH size(gone) AS units
OPTIONAL MATCH (t:RoutingTask {catalog: $catalog})
WHERE coalesce(t.status, 'admitted') <> 'retired'
  AND any(pid IN t.required WHERE NOT EXISTS { MATCH (:CatalogDatabase {catalog: $catalog, public_id: pid}) })
SET t.status = 'retired', t.retired_reason = 'a database it requires left the catalog'
RETURN units, count(t) AS tasks
