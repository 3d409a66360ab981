// The property keys of every node label and relationship type the graph holds (for the hint
// after an empty export). Relationship types come back as ":`TYPE`".
CALL db.schema.nodeTypeProperties() YIELD nodeLabels, propertyName
UNWIND nodeLabels AS name
RETURN 'node' AS kind, name, collect(DISTINCT propertyName) AS properties
UNION ALL
CALL db.schema.relTypeProperties() YIELD relType, propertyName
RETURN 'relationship' AS kind, relType AS name, collect(DISTINCT propertyName) AS properties
