// Public: what a router may see of each database (no location, no original name).
MATCH (d:CatalogDatabase {catalog: $catalog})
RETURN d.public_id AS public_id, d.engine AS engine, d.n_tables AS n_tables, d.n_rows AS n_rows,
       d.entities AS entities, d.measures AS measures, d.time_ranges AS time_ranges, d.summary AS summary
ORDER BY public_id
