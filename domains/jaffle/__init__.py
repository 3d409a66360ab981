"""The Jaffle Shop domain: dbt Labs' semantic-layer template imported with `domain import-dbt`,
its tables built in PostgreSQL from the shared jafgen CSVs, and the shop analysts' policy."""
