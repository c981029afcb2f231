"""Closed-loop HTTP: servers x load points (wrk, ab, iom-openloop closed), with the many-connections
plans (scaleplans: busy and idle connections). Its dataset is data.dataset.Dataset."""
