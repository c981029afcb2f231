"""Closed-loop HTTP: servers x load points (wrk, ab, iom-openloop closed), with the many-connections plans
(busy and idle connections)."""
