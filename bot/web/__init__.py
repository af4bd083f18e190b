"""The HTTP edge: Slack's request URL and the probes."""
