"""Open loop: requests at a fixed rate whether or not answers come (iom-openloop, vegeta's cross-check)."""
