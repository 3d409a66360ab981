MATCH (u:RoutingUnit {catalog: $catalog, status: 'ok'})
RETURN u.unit_id AS unit_id, u.database AS database, u.origin AS origin, u.intent AS intent,
       u.intent_source AS intent_source, u.sql AS sql, u.ordered AS ordered, u.fingerprint AS fingerprint,
       u.n_rows AS n_rows, u.columns AS columns, u.tables AS tables
ORDER BY u.unit_id
