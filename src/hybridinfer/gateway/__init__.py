"""Stage ``gateway``: HTTP in and out — auth, rate limits, request ids, protocols."""
