"""`smq ui` in a real browser: the operating system's headless Chromium, driven by Playwright, against
`smq local up --executor synthetic`. Two users, each with their own ui server signing as their own
access key, opened at the address it prints: submitted jobs appear in the queue table; a preemption
shows on the timeline; the owner's cancel works and another user's is refused by the API; a browser
that never opened that address is refused. Each page's screenshot is written under the test's output
directory."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack
from smq.ui.server import UiServer

from tests.e2e.local import synthetic_request, wait_for

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS_ENV = "SMQ_UI_SCREENSHOTS"
"""A directory to copy the screenshots to as well (docs/images is made from them)."""

sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright (the dev extra)")
if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install the operating system's Chromium (apt-get install -y chromium) "
        "to run the browser tests of smq ui; nothing downloads a browser",
        allow_module_level=True,
    )


sync_api.expect.set_options(timeout=15_000)
"""The pages poll every 3 seconds and the suite shares two cores: a few polls' grace for each check."""


def signing_as(stack: LocalStack, access_key: str) -> SmqApiClient:
    session = boto3.Session(aws_access_key_id=access_key, aws_secret_access_key="secret", region_name="us-east-1")
    return SmqApiClient(stack.api_url, boto_session=session)


@pytest.fixture(scope="module")
def alice(stack: LocalStack) -> Iterator[tuple[SmqApiClient, UiServer]]:
    client = signing_as(stack, "AKIAALICE00000000001")
    with UiServer(client, logs=stack.boto3_client("logs")) as server:
        yield client, server


@pytest.fixture(scope="module")
def bob(stack: LocalStack) -> SmqApiClient:
    return signing_as(stack, "AKIABOB0000000000001")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()


def screenshot(page: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    if copies := os.environ.get(SCREENSHOTS_ENV):
        shutil.copy(path, Path(copies) / path.name)


def test_the_queue_the_timeline_and_who_may_cancel(
    stack: LocalStack, alice: tuple[SmqApiClient, UiServer], bob: SmqApiClient, page: Any, tmp_path: Path
) -> None:
    alice_client, ui = alice
    admin = SmqApiClient(stack.api_url, region="us-east-1")
    alice_client.add_job(synthetic_request("alice-first", duration=120))
    alice_client.add_job(synthetic_request("alice-second", duration=120))
    wait_for(alice_client, "alice-first", {"running"})
    wait_for(alice_client, "alice-second", {"running"})
    bob.add_job(synthetic_request("bob-waits", duration=5))
    admin.add_job(synthetic_request("urgent", priority=5, duration=4))
    wait_for(admin, "urgent", {"running"}, timeout=60)

    page.goto(ui.url)
    home = f"http://127.0.0.1:{ui.guard.port}/"
    assert page.url == home
    table = page.get_by_role("table", name="Queue")
    for name in ("alice-first", "alice-second", "bob-waits", "urgent"):
        sync_api.expect(table.get_by_role("link", name=name, exact=True)).to_be_visible()
    screenshot(page, tmp_path, "queue")

    page.get_by_role("link", name="Timeline").click()
    page.get_by_label("Last").select_option(label="15 minutes")
    preempted = page.locator('[data-outcome="preempted"]')
    sync_api.expect(preempted.first).to_be_visible(timeout=30_000)
    assert re.search(r"^alice-\w+ attempt 1, priority 0, .*\(preempted\)$", preempted.first.get_attribute("aria-label"))
    sync_api.expect(page.locator("#legend")).to_contain_text("✕ preempted")
    screenshot(page, tmp_path, "timeline")

    page.get_by_role("link", name="Pools and teams").click()
    sync_api.expect(page.get_by_role("table", name="Pools").get_by_role("cell", name="ml.m5.xlarge")).to_be_visible()
    screenshot(page, tmp_path, "pools")

    page.goto(home + "#/job/bob-waits")
    page.get_by_text("The CreateTrainingJob request").focus()
    page.keyboard.press("Enter")
    sync_api.expect(page.locator("#request pre")).to_contain_text(
        "Only the job's owner or an admin may read its request"
    )
    page.get_by_role("button", name="Cancel job").click()
    page.get_by_role("button", name="Cancel the job").click()
    sync_api.expect(page.locator("#action-result")).to_contain_text("Refused (403)")
    assert bob.get_job("bob-waits")["state"] not in {"cancelled", "stopping"}
    screenshot(page, tmp_path, "job-refused")

    page.goto(home + "#/job/alice-first")
    sync_api.expect(page.get_by_role("heading", name="Job alice-first")).to_be_visible()
    page.get_by_text("The CreateTrainingJob request").focus()
    page.keyboard.press("Enter")
    request = page.locator("#request pre")
    sync_api.expect(request).to_contain_text('"TrainingJobName": "alice-first"')
    sync_api.expect(request).to_contain_text('"smq_synthetic_duration"')
    page.get_by_role("button", name="Cancel job").focus()
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Cancel the job").click()
    sync_api.expect(page.locator("#action-result")).to_contain_text("Done")
    assert wait_for(alice_client, "alice-first", {"cancelled"}, timeout=60)["state"] == "cancelled"
    screenshot(page, tmp_path, "job")


def test_a_browser_that_never_opened_the_printed_address_is_refused(
    alice: tuple[SmqApiClient, UiServer], page: Any
) -> None:
    _, ui = alice
    home = f"http://127.0.0.1:{ui.guard.port}/"
    for address in (home, home + "api/jobs", home + "?token=guessed"):
        response = page.goto(address)
        assert response.status == 403
        assert ui.guard.token not in response.text()
        assert "open the address `smq ui` printed" in response.text()
    assert page.context.cookies() == []
