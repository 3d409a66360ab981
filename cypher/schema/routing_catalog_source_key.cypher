CREATE CONSTRAINT routing_catalog_source_key IF NOT EXISTS FOR (n:CatalogSource) REQUIRE n.key IS UNIQUE
