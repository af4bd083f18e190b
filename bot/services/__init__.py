"""Services own persistence and workflow; Slack, HTTP and the CLI call them."""
