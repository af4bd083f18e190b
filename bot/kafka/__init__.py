"""Kafka at the edge: the metrics topic's consumer, the lag and DLQ pollers, dead-letter samples."""
