"""Configuration from the environment: clear one-line errors, no secrets echoed."""

from __future__ import annotations

import pytest

from bot.config import DEFAULT_DATABASE_URL, Config, ConfigError

GOOD = {"SLACK_BOT_TOKEN": "xoxb-1-2-secretvalue", "SLACK_SIGNING_SECRET": "abcdef0123456789abcdef0123456789"}


def test_defaults() -> None:
    config = Config.from_env(GOOD)
    assert config.database_url == DEFAULT_DATABASE_URL
    assert config.port == 3000
    assert config.kafka_bootstrap_servers is None and config.schema_registry_url is None
    assert config.slack_api_url == "https://slack.com/api/"


def test_everything_set() -> None:
    config = Config.from_env({
        **GOOD, "SLACK_APP_TOKEN": "xapp-1-abc", "DATABASE_URL": "postgresql://u@db:5432/changeops",
        "KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092", "SCHEMA_REGISTRY_URL": "http://registry:8081",
        "PORT": "8080", "SLACK_API_URL": "http://127.0.0.1:3001/api", "LOG_LEVEL": "debug",
    })
    assert config.port == 8080 and config.log_level == "DEBUG"
    assert config.slack_api_url == "http://127.0.0.1:3001/api/"
    assert config.kafka_bootstrap_servers == "k1:9092,k2:9092"


@pytest.mark.parametrize(("env", "variable"), [
    ({}, "SLACK_BOT_TOKEN"),
    ({"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET"),
    ({**GOOD, "SLACK_BOT_TOKEN": "xoxp-user-token"}, "SLACK_BOT_TOKEN"),
    ({**GOOD, "SLACK_SIGNING_SECRET": "short"}, "SLACK_SIGNING_SECRET"),
    ({**GOOD, "SLACK_APP_TOKEN": "xoxb-not-an-app-token"}, "SLACK_APP_TOKEN"),
    ({**GOOD, "DATABASE_URL": "mysql://x/y"}, "DATABASE_URL"),
    ({**GOOD, "DATABASE_URL": "changeops.db"}, "DATABASE_URL"),
    ({**GOOD, "KAFKA_BOOTSTRAP_SERVERS": "localhost"}, "KAFKA_BOOTSTRAP_SERVERS"),
    ({**GOOD, "KAFKA_BOOTSTRAP_SERVERS": "a:9092,b:99999"}, "KAFKA_BOOTSTRAP_SERVERS"),
    ({**GOOD, "SCHEMA_REGISTRY_URL": "registry:8081"}, "SCHEMA_REGISTRY_URL"),
    ({**GOOD, "PORT": "eighty"}, "PORT"),
    ({**GOOD, "PORT": "70000"}, "PORT"),
    ({**GOOD, "LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
    ({**GOOD, "CHANGEOPS_API_TOKEN": "short"}, "CHANGEOPS_API_TOKEN"),
])
def test_bad_values_name_the_variable_on_one_line(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Config.from_env(env)
    message = str(caught.value)
    assert message.startswith(variable)
    assert "\n" not in message


def test_secrets_never_appear_in_errors_or_repr() -> None:
    secret = "xoxp-very-secret-token-value"
    with pytest.raises(ConfigError) as caught:
        Config.from_env({**GOOD, "SLACK_BOT_TOKEN": secret})
    assert secret not in str(caught.value)
    config = Config.from_env({**GOOD, "CHANGEOPS_API_TOKEN": "api-token-0123456789"})
    assert all(value not in repr(config) for value in config.secrets)
    assert set(config.secrets) == {GOOD["SLACK_BOT_TOKEN"], GOOD["SLACK_SIGNING_SECRET"], "api-token-0123456789"}


def test_migrations_and_playground_need_no_slack_credentials() -> None:
    config = Config.from_env({}, require_slack=False)
    assert config.slack_bot_token == ""
