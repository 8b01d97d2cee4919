"""Running a process that serves: uvicorn settings, the accept loop, TLS, load shedding,
the JSON responses gateway and node share, child processes and the LLM servers."""
