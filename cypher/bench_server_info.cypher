// The server a benchmark ran on: version and the memory settings that bound its figures.
CALL dbms.components() YIELD versions, edition
RETURN 'neo4j' AS name, versions[0] + ' ' + edition AS value
UNION ALL
CALL dbms.listConfig() YIELD name, value
WHERE name IN ['server.memory.heap.max_size', 'server.memory.pagecache.size', 'db.memory.transaction.max']
RETURN name, value
