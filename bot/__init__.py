"""ChangeOps: schema-change governance and safe Kafka operations from Slack."""

__version__ = "0.1.0"
