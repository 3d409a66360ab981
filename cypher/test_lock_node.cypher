// Test only: take the write lock of one TestLock node.
MATCH (n:TestLock {key: $key})
SET n.holder = $holder
