"""The Slack edge: the Bolt app, its listeners, and the Web API client."""
