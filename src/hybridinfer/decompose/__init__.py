"""Stage ``decompose``: a request becomes a plan (a DAG of labelled subtasks)."""
