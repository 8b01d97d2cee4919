"""Backends run one subtask on one deployment, each speaking one protocol."""
