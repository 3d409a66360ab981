UNWIND $rows AS row
MATCH (a:Table {key: row.src}), (b:Table {key: row.dst})
MERGE (a)-[j:JOINS {columns: row.columns}]->(b)
