-- The dbt project's models (models/staging, models/marts/customer360), as PostgreSQL: the tables
-- its semantic models read. Each statement follows the dbt model of the same name. On DuckDB
-- (load.py) each is rendered by sqlglot; indexes and ANALYZE are PostgreSQL's only.
CREATE TABLE stg_locations AS
SELECT id AS location_id, name AS location_name, tax_rate, date_trunc('day', opened_at) AS opened_at
FROM raw_stores;

CREATE TABLE stg_products AS
SELECT sku AS product_id, name AS product_name, type AS product_type, description AS product_description,
       price / 100.0 AS product_price,
       CASE WHEN type = 'jaffle' THEN 1 ELSE 0 END AS is_food_item,
       CASE WHEN type = 'beverage' THEN 1 ELSE 0 END AS is_drink_item
FROM raw_products;

CREATE TEMPORARY TABLE stg_orders AS
SELECT id AS order_id, store_id AS location_id, customer AS customer_id, order_total / 100.0 AS order_total,
       tax_paid / 100.0 AS tax_paid, date_trunc('day', ordered_at) AS ordered_at
FROM raw_orders;

CREATE TABLE order_items AS
WITH supply AS (SELECT sku AS product_id, SUM(cost / 100.0) AS supply_cost FROM raw_supplies GROUP BY 1)
SELECT i.id AS order_item_id, i.order_id, i.sku AS product_id, p.product_price, supply.supply_cost,
       p.is_food_item, p.is_drink_item, o.ordered_at
FROM raw_items i
LEFT JOIN stg_orders o ON i.order_id = o.order_id
LEFT JOIN stg_products p ON i.sku = p.product_id
LEFT JOIN supply ON i.sku = supply.product_id;

CREATE TABLE orders AS
WITH summary AS (
    SELECT order_id, SUM(supply_cost) AS order_cost, SUM(is_food_item) AS count_food_items,
           SUM(is_drink_item) AS count_drink_items
    FROM order_items GROUP BY 1)
SELECT o.*, s.count_food_items > 0 AS is_food_order, s.count_drink_items > 0 AS is_drink_order, s.order_cost
FROM stg_orders o LEFT JOIN summary s ON o.order_id = s.order_id;

CREATE TABLE customers AS
WITH summary AS (
    SELECT o.customer_id, COUNT(DISTINCT o.order_id) AS count_lifetime_orders,
           COUNT(DISTINCT o.order_id) > 1 AS is_repeat_buyer, MIN(o.ordered_at) AS first_ordered_at,
           MAX(o.ordered_at) AS last_ordered_at, SUM(i.product_price) AS lifetime_spend_pretax,
           SUM(o.order_total) AS lifetime_spend
    FROM orders o LEFT JOIN order_items i ON o.order_id = i.order_id
    GROUP BY 1)
SELECT c.id AS customer_id, c.name AS customer_name, s.count_lifetime_orders, s.first_ordered_at,
       s.last_ordered_at, s.lifetime_spend_pretax, s.lifetime_spend,
       CASE WHEN s.is_repeat_buyer THEN 'returning' ELSE 'new' END AS customer_type
FROM raw_customers c LEFT JOIN summary s ON c.id = s.customer_id;

DROP TABLE stg_orders;
DROP TABLE raw_customers;
DROP TABLE raw_orders;
DROP TABLE raw_items;
DROP TABLE raw_products;
DROP TABLE raw_stores;
DROP TABLE raw_supplies;

ALTER TABLE stg_locations ADD PRIMARY KEY (location_id);
ALTER TABLE stg_products ADD PRIMARY KEY (product_id);
ALTER TABLE orders ADD PRIMARY KEY (order_id);
ALTER TABLE order_items ADD PRIMARY KEY (order_item_id);
ALTER TABLE customers ADD PRIMARY KEY (customer_id);
CREATE INDEX ON orders (ordered_at);
CREATE INDEX ON order_items (ordered_at);
-- The dimensions the metrics slice by, each with the time column the period filters on.
CREATE INDEX ON order_items (is_food_item, ordered_at);
CREATE INDEX ON order_items (is_drink_item, ordered_at);
CREATE INDEX ON orders (is_food_order, ordered_at);
CREATE INDEX ON orders (is_drink_order, ordered_at);
CREATE INDEX ON orders (order_total, ordered_at);
CREATE INDEX ON customers (first_ordered_at);
ANALYZE stg_locations, stg_products, orders, order_items, customers;
