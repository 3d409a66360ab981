CREATE CONSTRAINT routing_catalog_database_key IF NOT EXISTS FOR (n:CatalogDatabase) REQUIRE n.public_id IS UNIQUE
