"""Stage ``execute``: run each subtask where the router placed it, falling back on failure."""
