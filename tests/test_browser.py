"""The playground in a real browser: headless Chromium from Debian's packages, driven by Selenium through
Debian's chromedriver, against `bot playground` started as `make run` starts it. Writes the README's
screenshot (docs/playground.png, written when ``SCREENSHOT=1`` asks for it: a test run leaves the docs alone)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import ElementClickInterceptedException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"  # Debian's chromium and chromium-driver
SCREENSHOT = ROOT / "docs" / "playground.png"  # what the docs show: taken again by `SCREENSHOT=1 make test ARGS=tests/test_browser.py`
API_TOKEN = "browser-test-token-0123456789"
BOTS: dict[str, str] = {}  # a playground's page URL -> its bot's URL (the HTTP API)
LOGS: dict[str, Path] = {}  # a playground's page URL -> the file its output goes to (a pipe nobody reads could block it)


def start_playground(folder: Path, *extra: str, kafka: str | None = None, catalog: Path = ROOT / "examples" / "catalog.yaml") -> Iterator[str]:
    """`bot playground` on a fresh SQLite file with the example catalog (or ``catalog``) and orders-value v1 and v2, as
    `make run` sets it up."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder / 'playground.db'}", "CHANGEOPS_API_TOKEN": API_TOKEN, "LOG_LEVEL": "INFO"}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    if kafka is not None:
        env["KAFKA_BOOTSTRAP_SERVERS"], env["SLI_POLL_SECONDS"] = kafka, "5"  # as make run polls the demo's lag
    for args in (["migrate"], ["catalog", "load", str(catalog)], ["subject", "import", "orders-value", "examples/schemas/orders.avsc", "examples/schemas/orders-v2.avsc"]):
        subprocess.run([sys.executable, "-m", "bot", *args], env=env, cwd=ROOT, check=True, capture_output=True)
    page_port, bot_port = free_port(), free_port()
    url = f"http://127.0.0.1:{page_port}"
    BOTS[url], LOGS[url] = f"http://127.0.0.1:{bot_port}", folder / "playground.log"
    with LOGS[url].open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "bot", "playground", "--no-prompt", "--port", str(bot_port),
                                    "--slack-port", str(page_port), *extra], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):  # as a person does: open the page once it says so (it serves before the bot listens)
            if "What people do in the page is told below" in LOGS[url].read_text(errors="replace"):
                with urllib.request.urlopen(f"{url}/playground/state", timeout=5):
                    break
            assert process.poll() is None, LOGS[url].read_text(errors="replace")
            time.sleep(0.1)
        else:
            raise AssertionError(f"the playground did not start in 60 s:\n{LOGS[url].read_text(errors='replace')}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The playground as `make run` starts it on a machine without Java."""
    yield from start_playground(tmp_path_factory.mktemp("playground"))


@pytest.fixture(scope="module")
def kafka_playground(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str) -> Iterator[str]:
    """The playground as `make run` starts it with Java: the broker filled with the demo topics (a clean slate first)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    present = [t for t in ("orders", "orders.dlq") if t in admin.list_topics(timeout=10).topics]
    for future in admin.delete_topics(present).values() if present else ():
        future.result(timeout=30)
    while any(t in admin.list_topics(timeout=10).topics for t in present):
        time.sleep(0.2)
    if "enrich-orders" in {g.group_id for g in admin.list_consumer_groups().result(timeout=10).valid}:
        admin.delete_consumer_groups(["enrich-orders"])["enrich-orders"].result(timeout=30)
    yield from start_playground(tmp_path_factory.mktemp("kafka-playground"), "--seed-kafka", kafka=kafka_bootstrap)


@pytest.fixture(scope="module")
def crowded_playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The playground with the example catalog and 129 subjects more: its forms' menus ask the bot as one types."""
    import yaml

    folder = tmp_path_factory.mktemp("crowded-playground")
    catalog = yaml.safe_load((ROOT / "examples" / "catalog.yaml").read_text())
    catalog["subjects"]["orders-value"]["schema"] = str(ROOT / "examples" / catalog["subjects"]["orders-value"]["schema"])
    catalog["subjects"].update({f"topic-{i:03d}-value": {"owner": "orders-team"} for i in range(129)})
    (folder / "catalog.yaml").write_text(yaml.safe_dump(catalog))
    yield from start_playground(folder, catalog=folder / "catalog.yaml")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Headless Chromium (never a browser downloaded by a test tool)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        assert shutil.which(path), f"{path} is missing: scripts/test.sh installs Debian's chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000", "--lang=en-US"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


class Wait(WebDriverWait[WebDriver]):
    """A wait whose timeout says what the page showed and what the playground wrote, so a failure in CI can be read."""

    def until(self, method: Any, message: str = "") -> Any:
        try:
            return super().until(method, message)
        except TimeoutException:
            page = self._driver.find_element(By.TAG_NAME, "body").text[-3000:]
            log = next((p.read_text(errors="replace")[-3000:] for u, p in LOGS.items() if self._driver.current_url.startswith(u)), "")
            raise TimeoutException(f"{message}\n--- the page ---\n{page}\n--- the playground's output ---\n{log}") from None


def wait(browser: WebDriver, seconds: float = 20) -> WebDriverWait[WebDriver]:
    return Wait(browser, seconds, ignored_exceptions=[StaleElementReferenceException, ElementClickInterceptedException])


def act_as(browser: WebDriver, name: str) -> None:
    def chosen(b: WebDriver) -> bool:  # the page fills its list of people after it loads: wait for the name
        person = Select(b.find_element(By.ID, "person"))
        option = next((o.text for o in person.options if o.text.startswith(f"{name} — ")), None)
        if option is not None:
            person.select_by_visible_text(option)
        return option is not None

    wait(browser).until(chosen, f"{name} is not among the people to act as")


def open_channel(browser: WebDriver, name: str) -> None:
    def clicked(b: WebDriver) -> bool:  # the click inside the wait: the page re-renders its list as messages arrive (stale links)
        b.find_element(By.XPATH, f"//nav//a[starts-with(normalize-space(.), '# {name}')]").click()
        return True

    wait(browser).until(clicked)
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "place-title"), f"# {name}"))


def run_command(browser: WebDriver, text: str) -> None:
    """Type a slash command in the composer and send it. The page empties the box as it posts the command; if the box
    still holds it after a few seconds, the Enter was lost on the way to headless Chromium and Send is pressed instead."""
    box = browser.find_element(By.ID, "command")
    box.send_keys(text + "\n")
    deadline = time.monotonic() + 5
    while box.get_attribute("value") and time.monotonic() < deadline:
        time.sleep(0.1)
    if box.get_attribute("value") == text:
        browser.find_element(By.CSS_SELECTOR, "#composer button[type=submit]").click()
    wait(browser, 5).until(lambda b: b.find_element(By.ID, "command").get_attribute("value") == "",
                           f"the page never sent {text!r} (page at {browser.current_url})")


def card(browser: WebDriver, number: int) -> WebElement:
    """The proposal's card in the channel on screen (its newest rendering)."""
    return wait(browser).until(lambda b: next((a for a in reversed(b.find_elements(By.CSS_SELECTOR, "#messages article"))
                                               if f"Schema change #{number} " in a.text), None))


def card_text(browser: WebDriver, number: int) -> str:
    """The card's text, read within the wait: the page re-renders a card when it changes, so an element found a
    moment before can be gone by the time it is read."""
    return str(wait(browser).until(lambda b: next((t for t in (a.text for a in reversed(b.find_elements(By.CSS_SELECTOR, "#messages article")))
                                                   if f"Schema change #{number} " in t), None)))


def text_of(browser: WebDriver, css: str, wanted: Callable[[str], bool] = lambda _text: True) -> str:
    """The text of the first element ``css`` finds whose text is ``wanted``, read within the wait: the page re-renders its
    messages on every change, so an element found a moment before can be gone by the time it is read."""
    return str(wait(browser).until(lambda b: next((t for t in (a.text for a in b.find_elements(By.CSS_SELECTOR, css)) if wanted(t)), None)))


def click_in(browser: WebDriver, label: str, wanted: Callable[[str], bool], css: str = "#messages article", newest: bool = False) -> None:
    """Click the button ``label`` of the first message ``css`` finds (the newest first, with ``newest``) whose text is
    ``wanted`` and that has it, found and clicked within the wait (a re-rendered message is found again)."""
    def clicked(b: WebDriver) -> bool:
        messages = b.find_elements(By.CSS_SELECTOR, css)
        button = next((x for a in (reversed(messages) if newest else messages) if wanted(a.text)
                       for x in a.find_elements(By.CSS_SELECTOR, "button") if x.text == label), None)
        if button is None:
            return False
        button.click()
        return True

    wait(browser).until(clicked)


def press(browser: WebDriver, number: int, label: str) -> None:
    click_in(browser, label, lambda text: f"Schema change #{number} " in text, newest=True)


def new_schema(field: int, kind: Any) -> str:
    schema = json.loads((ROOT / "examples" / "schemas" / "orders-v2.avsc").read_text())  # the current version
    schema["fields"][field]["type"] = kind
    return json.dumps(schema)


def test_propose_through_the_form_then_owners_approve_and_the_card_turns_approved(playground: str, browser: WebDriver,
                                                                                  tmp_path: Path) -> None:
    browser.get(f"{playground}/")
    act_as(browser, "you")
    open_channel(browser, "orders-pipeline")
    run_command(browser, "/schema propose orders-value")
    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal textarea")))
    modal = browser.find_element(By.CSS_SELECTOR, "#modal-layer .modal")
    assert Select(modal.find_element(By.CSS_SELECTOR, "select")).first_selected_option.text == "orders-value"
    modal.find_element(By.CSS_SELECTOR, "textarea").send_keys("{not json")
    modal.find_element(By.CSS_SELECTOR, "[data-testid=modal-submit]").click()
    error = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .input-error")))
    assert "JSON" in error.text  # response_action errors, under the field, and nothing proposed
    textarea = browser.find_element(By.CSS_SELECTOR, "#modal-layer textarea")
    textarea.clear()
    textarea.send_keys(new_schema(1, "long"))
    browser.find_element(By.CSS_SELECTOR, "#modal-layer [data-testid=modal-submit]").click()
    wait(browser).until(ec.invisibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal")))
    shown = card_text(browser, 1)
    assert "BREAKING" in shown and "TYPE_PROMOTED" in shown and "analytics-team: ⏳ waiting" in shown.replace("\u23f3", "⏳")

    act_as(browser, "carol")  # analytics-team and growth-team: one click answers for both
    open_channel(browser, "orders-pipeline")
    press(browser, 1, "Approve")
    wait(browser).until(lambda b: "growth-team: ✅ approved" in card(b, 1).text)
    act_as(browser, "alice")  # orders-team runs enrich-orders, a reader too
    open_channel(browser, "orders-pipeline")
    press(browser, 1, "Approve")
    wait(browser).until(lambda b: not card(b, 1).find_elements(By.XPATH, ".//button[.='Approve']"))
    assert "orders-team: ✅ approved" in card_text(browser, 1)
    assert browser.save_screenshot(str(SCREENSHOT if os.environ.get("SCREENSHOT") == "1" else tmp_path / SCREENSHOT.name))


def test_an_outsiders_click_gets_the_ephemeral_refusal_and_changes_nothing(playground: str, browser: WebDriver, tmp_path: Path) -> None:
    browser.get(f"{playground}/")
    act_as(browser, "you")
    open_channel(browser, "orders-pipeline")
    run_command(browser, "/schema propose orders-value")
    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal textarea")))
    upload = tmp_path / "orders-v2.avsc"
    upload.write_text(new_schema(1, "string"))
    browser.find_element(By.CSS_SELECTOR, "#modal-layer input[type=file]").send_keys(str(upload))  # the file, not the text box
    browser.find_element(By.CSS_SELECTOR, "#modal-layer [data-testid=modal-submit]").click()
    wait(browser).until(ec.invisibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal")))
    number = wait(browser).until(lambda b: max((int(m.group(1)) for a in b.find_elements(By.CSS_SELECTOR, "#messages article")
                                                if "TYPE_CHANGED" in a.text and (m := re.search(r"Schema change #(\d+) ", a.text))), default=0))
    before = card_text(browser, number)
    act_as(browser, "dave")
    open_channel(browser, "orders-pipeline")
    press(browser, number, "Approve")
    refusal = text_of(browser, "#messages article.ephemeral")
    assert "Only visible to you" in refusal and "not" in refusal.lower()
    act_as(browser, "you")
    open_channel(browser, "orders-pipeline")
    assert card_text(browser, number) == before  # nothing changed
    assert not browser.find_elements(By.CSS_SELECTOR, "#messages article.ephemeral")  # the refusal was dave's alone


def samples(playground: str, value: float, minutes_ahead: float) -> None:
    """One schema-error-rate sample of enrich-orders through the bot's HTTP API, stamped ``minutes_ahead`` of now (the
    playground's own feeder reports healthy samples stamped now: these come after them)."""
    body = json.dumps([{"pipeline": "enrich-orders", "sli": "schema_error_rate", "value": value,
                        "time": (datetime.now(UTC) + timedelta(minutes=minutes_ahead)).isoformat()}]).encode()
    request = urllib.request.Request(f"{BOTS[playground]}/api/v1/metrics", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {API_TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["accepted"] == 1


def alert_text(browser: WebDriver) -> str:
    """The enrich-orders alert on screen, read within the wait (it is re-rendered as it changes)."""
    return str(wait(browser).until(lambda b: next((t for t in (a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article"))
                                                   if "enrich-orders" in t and "Schema error rate" in t), None)))


def test_an_alert_pages_is_acknowledged_by_the_oncall_refused_to_an_outsider_and_resolves(playground: str, browser: WebDriver) -> None:
    samples(playground, 0.05, minutes_ahead=1)  # five times the page threshold
    browser.get(f"{playground}/")
    act_as(browser, "dave")
    open_channel(browser, "orders-pipeline")
    wait(browser).until(lambda b: "PAGE" in alert_text(b))

    def press_on_alert(label: str) -> None:
        click_in(browser, label, lambda text: "enrich-orders" in text and "Schema error rate" in text)

    press_on_alert("Acknowledge")  # dave is in no team
    refusal = text_of(browser, "#messages article.ephemeral", lambda text: "enrich-orders" in text)
    assert "Only members or oncall of orders-team (or the global oncall) can act on the alerts of enrich-orders" in refusal
    assert "Acknowledged by" not in alert_text(browser)
    act_as(browser, "alice")  # orders-team's oncall
    open_channel(browser, "orders-pipeline")
    press_on_alert("Acknowledge")
    wait(browser).until(lambda b: "Acknowledged by @alice" in alert_text(b))
    samples(playground, 0.0, minutes_ahead=2)
    samples(playground, 0.0, minutes_ahead=3.5)  # healthy for its clear_for (a minute of sample time): resolved
    wait(browser).until(lambda b: "Resolved" in alert_text(b))
    # read within the wait: the page re-renders a message as it changes, so a button found a moment before can be gone
    wait(browser).until(lambda b: "Acknowledge" not in [x.text for x in b.find_elements(By.CSS_SELECTOR, "#messages article button")])


def test_mrkdwn_is_rendered_and_user_text_stays_text(playground: str, browser: WebDriver) -> None:
    browser.get(f"{playground}/")
    wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#channels a")))
    names = {"users": {"U0000ALICE": "alice"}, "channels": {"C1": "changes"}, "groups": {"S0ORDERS": "orders-team"}}
    html = browser.execute_script("return mrkdwn(arguments[0], arguments[1]);",
                                  "*bold* _it_ ~gone~ `a<b` <@U0000ALICE> <!subteam^S0ORDERS> <#C1> "
                                  "<https://example.com/x?a=1&amp;b=2|the link> &lt;script&gt;alert(1)&lt;/script&gt; :white_check_mark:\n> quoted",
                                  names)
    assert "<b>bold</b>" in html and "<i>it</i>" in html and "<s>gone</s>" in html and "<code>a&lt;b</code>" in html
    assert "@alice" in html and "@orders-team" in html and "#changes" in html
    assert 'href="https://example.com/x?a=1&amp;b=2"' in html and ">the link</a>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html  # escaped user text is shown, never run
    assert "\u2705" in html and "<blockquote>quoted</blockquote>" in html
    bold = browser.execute_script("return mrkdwn(arguments[0], arguments[1]);", "*Replay #1: `orders.dlq` → `orders`*", names)
    assert bold == "<b>Replay #1: <code>orders.dlq</code> → <code>orders</code></b>"
    assert "javascript:" not in browser.execute_script("return mrkdwn('<javascript:alert(1)|x>', arguments[0]);", names)


def test_a_replay_is_planned_confirmed_and_copied_by_the_oncall_and_refused_to_an_outsider(kafka_playground: str,
                                                                                           browser: WebDriver) -> None:
    browser.get(f"{kafka_playground}/")
    act_as(browser, "bob")  # the global oncall
    open_channel(browser, "orders-pipeline")
    assert "the lag and DLQ of enrich-orders are polled" in browser.find_element(By.ID, "kafka").text
    run_command(browser, "/replay orders.dlq --to orders --filter error=timeout")
    plan = text_of(browser, "#messages article", lambda text: "Replay #1" in text and "Confirm" in text)
    assert "100 messages to copy" in plan and "200 left out by the filter" in plan
    click_in(browser, "Confirm", lambda text: "Replay #1" in text)
    dialog = wait(browser).until(ec.element_to_be_clickable((By.CSS_SELECTOR, "[data-testid=confirm-yes]")))
    dialog.click()
    wait(browser, 60).until(lambda b: any("Copied 100 of 100 to orders" in a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article")))
    act_as(browser, "dave")
    open_channel(browser, "orders-pipeline")
    run_command(browser, "/replay orders.dlq --to orders")
    refusal = text_of(browser, "#messages article.ephemeral")
    assert "oncall" in refusal.lower() and "Replay #2" not in browser.find_element(By.ID, "messages").text


def welcome_button(browser: WebDriver, label: str) -> None:
    """Press a button of the playground's welcome (the first message of #schema-changes)."""
    open_channel(browser, "schema-changes")
    click_in(browser, label, lambda text: "Welcome to the ChangeOps playground" in text)


def acting_as(browser: WebDriver) -> str:
    return str(Select(browser.find_element(By.ID, "person")).first_selected_option.text.split(" — ")[0])


def test_the_first_page_welcomes_and_each_button_starts_its_journey(kafka_playground: str, browser: WebDriver) -> None:
    """A newcomer lands on the welcome, in the cards' channel, beside the alerts' channel; each button starts its journey
    as its person: the form filled with a breaking change (you), the card to approve (carol), the lag page (bob)."""
    browser.get(f"{kafka_playground}/")
    browser.execute_script("localStorage.clear();")
    browser.get(f"{kafka_playground}/")
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "place-title"), "# schema-changes"))
    buttons = wait(browser).until(lambda b: next(([x.text for x in a.find_elements(By.CSS_SELECTOR, "button")]  # read within the wait:
                                                  for a in b.find_elements(By.CSS_SELECTOR, "#messages article")  # the page re-renders
                                                  if "Welcome to the ChangeOps playground" in a.text), None))
    assert buttons == ["Start as you", "Start as carol", "Start as bob"]
    sidebar = wait(browser).until(lambda b: [a.text for a in b.find_elements(By.CSS_SELECTOR, "#channels a")])
    assert any(t.startswith("# orders-pipeline") for t in sidebar) and not any(t.startswith("# changes") for t in sidebar)

    welcome_button(browser, "Start as carol")  # nothing to approve yet: said, not pretended
    wait(browser).until(lambda b: "No change waits for carol yet" in b.find_element(By.ID, "toast").text)
    assert acting_as(browser) == "carol"

    welcome_button(browser, "Start as you")
    schema = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#modal-layer textarea[data-action-id=schema]")))
    assert acting_as(browser) == "you" and json.loads(schema.get_attribute("value") or "{}")["fields"][1] == {"name": "quantity", "type": "string"}
    browser.find_element(By.CSS_SELECTOR, "#modal-layer [data-testid=modal-submit]").click()
    wait(browser).until(ec.invisibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal")))
    number = wait(browser).until(lambda b: max((int(m.group(1)) for a in b.find_elements(By.CSS_SELECTOR, "#messages article")
                                                if "BREAKING" in a.text and (m := re.search(r"Schema change #(\d+) ", a.text))), default=0))

    welcome_button(browser, "Start as carol")
    focused = wait(browser).until(lambda b: next((a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article.focus")), None))
    assert acting_as(browser) == "carol" and f"Schema change #{number} " in focused
    press(browser, number, "Approve")
    wait(browser).until(lambda b: "growth-team: ✅ approved" in card(b, number).text)

    welcome_button(browser, "Start as bob")
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "place-title"), "# orders-pipeline"))
    assert acting_as(browser) == "bob"
    wait(browser, 150).until(lambda b: any("Source lag" in a.text and "PAGE" in a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article")))
    welcome_button(browser, "Start as bob")
    page = wait(browser).until(lambda b: next((t for t in (a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article.focus"))
                                               if "Source lag" in t), None))
    assert "enrich-orders" in page

    click_in(browser, "Acknowledge", lambda _text: True, "#messages article.focus")
    wait(browser).until(lambda b: any("Acknowledged by @bob" in a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article.focus")))
    click_in(browser, "Plan a backfill", lambda _text: True, "#messages article.focus")  # the form, filled from the alert: the group, its topic, an hour back
    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal")))
    browser.find_element(By.CSS_SELECTOR, "#modal-layer [data-testid=modal-submit]").click()
    wait(browser).until(ec.invisibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal")))
    plan = wait(browser, 60).until(lambda b: next((t for t in (a.text for a in b.find_elements(By.CSS_SELECTOR, "#messages article"))
                                                   if "Backfill #" in t and "Confirm" in t), None))
    assert "enrich-orders" in plan


def test_a_menu_of_more_subjects_than_slack_lists_asks_the_bot_as_one_types(crowded_playground: str, browser: WebDriver) -> None:
    browser.get(f"{crowded_playground}/")
    act_as(browser, "you")
    open_channel(browser, "orders-pipeline")
    run_command(browser, "/schema propose")
    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal input.suggest")))
    menu = "#modal-layer select.external_select"
    wait(browser).until(lambda b: len(Select(b.find_element(By.CSS_SELECTOR, menu)).options) == 101,  # the placeholder and 100
                        "the menu was not offered the first 100 subjects before anything was typed")
    browser.find_element(By.CSS_SELECTOR, "#modal-layer input.suggest").send_keys("ORDERS")
    wait(browser).until(lambda b: [o.text for o in Select(b.find_element(By.CSS_SELECTOR, menu)).options][1:] == ["orders-value"],
                        "typing did not narrow the menu to orders-value")
    Select(browser.find_element(By.CSS_SELECTOR, menu)).select_by_visible_text("orders-value")
    browser.find_element(By.CSS_SELECTOR, "#modal-layer textarea").send_keys(new_schema(1, "long"))
    browser.find_element(By.CSS_SELECTOR, "#modal-layer [data-testid=modal-submit]").click()
    wait(browser).until(ec.invisibility_of_element_located((By.CSS_SELECTOR, "#modal-layer .modal")))
    assert "TYPE_PROMOTED" in card_text(browser, 1)
