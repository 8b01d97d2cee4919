"""Steps that run in the gateway process: extractive summaries and retrieval on MiniLM."""
