"""Relational state: keys, nodes, requests with their traces and decisions."""
