"""Captured datasets: Dataset (the closed-loop HTTP kind's and every kind's base: where it came from,
its summary, one value for prose) and report (what pages compute to quote). Imports the layers below."""
