// The release folder a catalog's SQLite databases came from (private: no routing tool reads it).
MATCH (s:CatalogSource {catalog: $catalog, kind: 'sqlite-folder'})
RETURN s.root AS root
