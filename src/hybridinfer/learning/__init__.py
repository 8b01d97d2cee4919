"""A bounded online learner over the candidates the hard rules leave (``docs/learning.md``)."""
