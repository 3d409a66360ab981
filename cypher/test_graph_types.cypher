// Test helper: every node label and relationship type in the graph.
CALL () { MATCH (n) UNWIND labels(n) AS name RETURN DISTINCT 'node' AS kind, name
          UNION MATCH ()-[e]->() RETURN DISTINCT 'edge' AS kind, type(e) AS name }
RETURN kind, name ORDER BY kind, name
