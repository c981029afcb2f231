"""Servers: which servers exist and how each starts (manifest), the one response they all give and a
tiny HTTP client to check it (http), and the conformance battery every HTTP server is held to
(battery). The lowest layer: it imports nothing else of iobench."""
