// Test only: nodes two transactions lock in opposite orders (tests/test_graph_retries.py).
UNWIND $keys AS k
MERGE (:TestLock {key: k})
