"""The Flink edge: Flink's own SQL planner, in a worker process of its own environment (PyFlink pins numpy,
pyarrow and Apache Beam versions of its own, so it never shares the bot's virtualenv)."""
