CREATE CONSTRAINT routing_catalog_table_key IF NOT EXISTS FOR (n:CatalogTable) REQUIRE n.key IS UNIQUE
