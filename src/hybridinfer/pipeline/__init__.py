"""The one entry every protocol calls: decompose, route, execute, aggregate, traced."""
