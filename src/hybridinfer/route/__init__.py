"""Stage ``route``: filter → score → choose a deployment per subtask, with fallbacks."""
