"""HTTP clients: five Java clients (and the C generator beside them) as the load against one fixed server."""
