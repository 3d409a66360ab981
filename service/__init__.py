"""dibench service layer: configuration, errors, graph and warehouse access, CLI and HTTP API."""
