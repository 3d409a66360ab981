"""The ground's stores and clients: the graph (Neo4j, Cypher files and their guard, the domain
write lease, each metric's policy as the graph holds it), the warehouse (read-only execution,
roles, a pack's data, data fingerprints), the local servers and the LLM client."""
