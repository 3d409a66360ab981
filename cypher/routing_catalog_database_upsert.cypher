UNWIND $rows AS row
MATCH (s:CatalogSource {key: row.source_key})
MERGE (d:CatalogDatabase {public_id: row.public_id})
SET d.catalog = row.catalog, d.engine = row.engine, d.n_tables = row.n_tables, d.n_rows = row.n_rows,
    d.entities = row.entities, d.measures = row.measures, d.time_ranges = row.time_ranges,
    d.summary = row.summary, d.content_hash = row.content_hash, d.profiler = row.profiler
MERGE (d)-[:CatalogIngestedFrom]->(s)
