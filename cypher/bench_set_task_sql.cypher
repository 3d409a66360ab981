// Benchmark helper (bench/review_bench.py): give one task a gold SQL of many rows, so its review
// page carries the most rows a page shows.
MATCH (t:Task {key: $key})
SET t.gold_sql = $sql, t.gold_params = $params
