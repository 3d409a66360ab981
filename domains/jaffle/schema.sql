-- The jafgen seeds as they are in the CSV files, in temporary tables (models.sql drops them at its
-- end): only the tables the dbt project builds from them stay in the schema. Plain SQL that sqlglot
-- renders for DuckDB too (load.py), hence no ON COMMIT DROP.
CREATE TEMPORARY TABLE raw_customers (id text, name text);
CREATE TEMPORARY TABLE raw_orders (id text, customer text, ordered_at timestamp, store_id text,
                                   subtotal integer, tax_paid integer, order_total integer);
CREATE TEMPORARY TABLE raw_items (id text, order_id text, sku text);
CREATE TEMPORARY TABLE raw_products (sku text, name text, type text, price integer, description text);
CREATE TEMPORARY TABLE raw_stores (id text, name text, opened_at timestamp, tax_rate numeric(6, 4));
CREATE TEMPORARY TABLE raw_supplies (id text, name text, cost integer, perishable boolean, sku text);
