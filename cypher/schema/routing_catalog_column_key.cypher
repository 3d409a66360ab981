CREATE CONSTRAINT routing_catalog_column_key IF NOT EXISTS FOR (n:CatalogColumn) REQUIRE n.key IS UNIQUE
