// Whether a user query dibench gave up on at its deadline still runs on the server: its
// transaction carries the tag in its metadata (stores/cypher_guard.py holds its slot till then).
SHOW TRANSACTIONS YIELD metaData
WHERE metaData.dibench_user_query = $tag
RETURN count(*) AS running
