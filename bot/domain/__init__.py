"""Pure domain logic: no Slack, Kafka or database imports."""
