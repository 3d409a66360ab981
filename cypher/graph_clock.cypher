// A trivial read: its only use is the bookmark the server returns with it, Neo4j's position in
// its transaction log, which moves with every committed write (stores.graph.Graph.clock).
RETURN 1 AS one
