// The tables of a domain and their columns: the names a rule document may mention
// (ingest/extract.py looks for them in the document's text).
MATCH (t:Table {domain: $domain})
RETURN t.name AS name, coalesce(t.columns, []) AS columns
ORDER BY name
