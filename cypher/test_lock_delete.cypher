// Test only: remove the TestLock nodes.
MATCH (n:TestLock) WHERE n.key IN $keys
DETACH DELETE n
