"""What words mean, from dictionaries shipped in packages (Princeton WordNet 3.0): read by the
answer cache's near-miss guard and by the privacy scan, below both."""
