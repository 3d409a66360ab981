-- The jafgen seeds as they are in the CSV files, in transaction-local temporary tables: only the
-- tables the dbt project builds from them (models.sql) stay in the schema.
CREATE TEMPORARY TABLE raw_customers (id text, name text) ON COMMIT DROP;
CREATE TEMPORARY TABLE raw_orders (id text, customer text, ordered_at timestamp, store_id text,
                                   subtotal integer, tax_paid integer, order_total integer) ON COMMIT DROP;
CREATE TEMPORARY TABLE raw_items (id text, order_id text, sku text) ON COMMIT DROP;
CREATE TEMPORARY TABLE raw_products (sku text, name text, type text, price integer, description text) ON COMMIT DROP;
CREATE TEMPORARY TABLE raw_stores (id text, name text, opened_at timestamp, tax_rate numeric) ON COMMIT DROP;
CREATE TEMPORARY TABLE raw_supplies (id text, name text, cost integer, perishable boolean, sku text) ON COMMIT DROP;
