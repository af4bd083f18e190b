"""The Slack edge of Flink jobs: ``/flink status JOB``."""
