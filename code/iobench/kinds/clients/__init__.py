"""HTTP clients: five Java clients as the load against one fixed server (clientrun)."""
